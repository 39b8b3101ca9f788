import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeClaudeCodeCall } from '../support/agent-logs'
import { runCliCaptured } from '../support/cli'
import { newerPriceData } from '../support/price-data'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate import` prices as a server on the same data folder would: with the runtime prices
 * the admin API stored there (they win over the library) and the newer price data the server
 * cached there (`prices.json`), not only with the bundled data. Before, it priced with the
 * bundled data and the config alone: a model priced at runtime was imported at its library
 * price, and one only newer data knows was left unpriced.
 */

let t: TestServer
let logs: string
const HAIKU = 'claude-haiku-4-5-20251001'
const NEW_MODEL = 'claude-newer-than-the-bundled-data'

const newer = await newerPriceData({ anthropic: [{ id: NEW_MODEL, match: { equals: NEW_MODEL }, prices: { input_mtok: 10, output_mtok: 20 } }] })

beforeAll(async () => {
  logs = mkdtempSync(join(tmpdir(), 'burnrate-import-prices-'))
  // A server made the data folder: its database, a runtime price the admin API stored, and newer price data it cached.
  t = await startTestServer({ import: { watch: false } })
  await t.stop()
  const db = new Database(t.dbFile)
  db.prepare(
    'INSERT INTO price_overrides (provider, model, input_mtok, output_mtok, cache_read_mtok, cache_write_mtok, updated_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)',
  ).run('anthropic', HAIKU, 1, 2, Date.now())
  db.close()
  writeFileSync(join(t.dir, 'prices.json'), JSON.stringify({ updated_at: '2026-11-30T00:00:00.000Z', fetched_at: new Date().toISOString(), providers: newer }))
})
afterAll(async () => {
  await t.cleanup()
  rmSync(logs, { recursive: true, force: true })
})

describe('burnrate import prices as the server on its data folder would', () => {
  it('with the runtime prices stored there and the newer price data cached there', async () => {
    const bundled = calcPrice({ input_tokens: 100_000, output_tokens: 10_000 }, HAIKU, { providerId: 'anthropic' })!.total_price
    // The bundled data does not know the newer model (the import applies the cached data to this process's library).
    expect(calcPrice({ input_tokens: 1, output_tokens: 1 }, NEW_MODEL, { providerId: 'anthropic' })).toBeFalsy()
    for (const [id, model] of [['msg_prices_runtime', HAIKU], ['msg_prices_newer', NEW_MODEL]]) {
      const r = await runCliCaptured('import', 'claude-code', '--path', writeClaudeCodeCall(logs, id, model), '--config', t.configFile, '--data-dir', t.dir, '--local', '--json')
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 1 })
    }
    const db = new Database(t.dbFile, { readonly: true })
    const rows = db.prepare('SELECT model, cost_usd, priced FROM calls ORDER BY model').all() as { model: string; cost_usd: number; priced: number }[]
    db.close()
    const runtime = rows.find((r) => r.model === HAIKU)!
    const cached = rows.find((r) => r.model === NEW_MODEL)!
    // The runtime price: $1 and $2 per million (the library's is $1 and $5).
    expect(runtime.priced).toBe(1)
    expect(runtime.cost_usd).toBeCloseTo(0.1 + 0.02, 12)
    expect(runtime.cost_usd).not.toBeCloseTo(bundled, 6)
    // The cached data's price: $10 and $20 per million.
    expect(cached.priced).toBe(1)
    expect(cached.cost_usd).toBeCloseTo(1 + 0.2, 12)
  })
})
