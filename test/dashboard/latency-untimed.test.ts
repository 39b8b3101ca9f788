import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeClaudeCodeCall } from '../support/agent-logs'
import { runCliCaptured } from '../support/cli'
import { usePostgres } from '../support/pg-harness'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

/**
 * Calls recorded without a latency (imported from the agents' logs, a Batch API's requests read
 * from its results file: `latency_ms` 0, README "no latency") are not calls answered in 0 ms: the
 * Errors & latency figures (`/api/dashboard/stats`) are those of the calls that have one, exact up
 * to 10,000 calls and from the rollups' histograms above, while every call still counts as a request.
 */
let t: TestServer
let logs: string
const now = Date.now()

beforeAll(async () => {
  logs = mkdtempSync(join(tmpdir(), 'burnrate-untimed-'))
  t = await startTestServer({ timezone: 'UTC', import: { watch: false } })
  // Two proxied calls in the last hour, 2 s and 3 s.
  t.server.ledger.record(makeCall({ ts: now - 20 * 60_000, latency_ms: 2000 }))
  t.server.ledger.record(makeCall({ ts: now - 19 * 60_000, latency_ms: 3000 }))
  await t.server.ledger.flush()
  // Three Claude Code calls read from its logs (11 minutes ago) by `burnrate import`.
  for (const id of ['msg_untimed_1', 'msg_untimed_2', 'msg_untimed_3']) {
    const dir = writeClaudeCodeCall(logs, id, 'claude-haiku-4-5-20251001')
    const r = await runCliCaptured('import', 'claude-code', '--path', dir, '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
    expect(r.code, r.out).toBe(0)
    expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 1 })
  }
  // Three days ago: 100 proxied calls of 1,000 to 1,099 ms among 10,000 calls a batch's results brought.
  const old = now - 3 * 86_400_000
  for (let i = 0; i < 100; i++) t.server.ledger.record(makeCall({ ts: old + i * 1000, latency_ms: 1000 + i }))
  for (let i = 0; i < 10_000; i++) {
    t.server.ledger.record(makeCall({ ts: old + i * 10, latency_ms: 0, endpoint: 'batch.chat.completions', source: 'proxy' }))
  }
  await t.server.ledger.flush()
}, 120_000)

afterAll(async () => {
  await t?.cleanup()
  rmSync(logs, { recursive: true, force: true })
})

const stats = async (range: string) => (await getJson(`${t.url}/api/dashboard/stats?range=${range}`)).body

describe('latency of calls recorded without one', () => {
  it('leaves imported calls out of the exact latency figures', async () => {
    const s = await stats('1h')
    expect(s.total_requests).toBe(5)
    expect(s.avg_latency_ms).toBe(2500)
    expect(s.p50_latency_ms).toBe(2000)
    expect(s.p95_latency_ms).toBe(3000)
  })

  it("leaves a batch's requests out of the histograms' figures", async () => {
    const s = await stats('7d')
    expect(s.total_requests).toBe(5 + 10_100)
    // (2000 + 3000 + 100 calls of 1000..1099 ms) / 102
    expect(s.avg_latency_ms).toBeCloseTo((5000 + 100 * 1049.5) / 102, 9)
    expect(Math.abs(s.p50_latency_ms - 1050) / 1050).toBeLessThan(0.02)
    expect(Math.abs(s.p95_latency_ms - 1096) / 1096).toBeLessThan(0.02)
  })
})

describe('latency of calls recorded without one, on PostgreSQL', () => {
  const h = usePostgres({ upstream: false })
  it('leaves them out of the exact and the histograms’ figures', async () => {
    const pg = await h.server()
    const at = Date.now()
    pg.server.ledger.record(makeCall({ ts: at - 20 * 60_000, latency_ms: 2000 }))
    pg.server.ledger.record(makeCall({ ts: at - 19 * 60_000, latency_ms: 3000 }))
    for (let i = 0; i < 3; i++) pg.server.ledger.record(makeCall({ ts: at - 11 * 60_000 + i, latency_ms: 0, source: 'import', api_key_hash: '', key_hint: '' }))
    const old = at - 3 * 86_400_000
    for (let i = 0; i < 100; i++) pg.server.ledger.record(makeCall({ ts: old + i * 1000, latency_ms: 1000 + i }))
    for (let i = 0; i < 10_000; i++) pg.server.ledger.record(makeCall({ ts: old + i * 10, latency_ms: 0, endpoint: 'batch.chat.completions' }))
    expect(await pg.server.ledger.flushed()).toBe(true)
    const get = async (range: string) => (await getJson(`${pg.url}/api/dashboard/stats?range=${range}`)).body
    expect(await get('1h')).toMatchObject({ total_requests: 5, avg_latency_ms: 2500, p50_latency_ms: 2000, p95_latency_ms: 3000 })
    const s = await get('7d')
    expect(s.total_requests).toBe(10_105)
    expect(s.avg_latency_ms).toBeCloseTo((5000 + 100 * 1049.5) / 102, 9)
    expect(Math.abs(s.p50_latency_ms - 1050) / 1050).toBeLessThan(0.02)
  }, 120_000)
})
