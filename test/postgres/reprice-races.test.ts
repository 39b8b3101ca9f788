import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { type Answers, MODEL, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'
import { postJson, request } from '../support/http'
import { holdRows, lockWaiters, until, usePostgres } from '../support/pg-harness'

/**
 * PostgreSQL (READ COMMITTED): a call taking a newer usage (a background response's result,
 * src/main/pricing/background.ts; an imported answer that grew, src/main/import/grown.ts) reads
 * the call back, then updates it and moves the rollups and spend by `new cost - cost read`. A
 * re-price (`?all=true`) of the same call committing between that read and that update must not
 * be counted twice, nor make the larger usage be lost. The order is forced with a row lock the
 * test holds: the re-price queues on it first, the other second.
 */

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const CLOCK = { timezone: 'UTC', budgets: { week_start: 'monday' as const } }

/** The calls' total cost, and the rollups'. */
async function sums(store: PostgresStore): Promise<{ calls: number; day: number; fiveMin: number }> {
  const sum = async (table: string) => (await store.get<{ s: number }>(`SELECT coalesce(sum(cost_usd), 0)::float8 AS s FROM ${table}`))!.s
  return { calls: await sum('calls'), day: await sum('dash_day'), fiveMin: await sum('dash_5m') }
}

/**
 * A Claude Code log in `dir` with one answer of `model`; `run(pricer, out)` writes it as having
 * `out` output tokens so far (its lines up to that one) and imports the log, as `burnrate import` does.
 */
function answerLog(store: PostgresStore, dir: string, model: string) {
  mkdirSync(join(dir, 'projects/p'), { recursive: true })
  const ts = Date.now() - 60_000
  const line = (out: number) => JSON.stringify({
    type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(ts).toISOString(), requestId: 'req_1',
    message: { id: 'msg_RACE', model, usage: { input_tokens: 10, cache_read_input_tokens: 20000, output_tokens: out } },
  }) + '\n'
  const cli = openDatabase(join(dir, 'cli.db'))
  let written = ''
  return {
    run(pricer: Pricer, out: number) {
      written += line(out)
      writeFileSync(join(dir, 'projects/p/s.jsonl'), written)
      return importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer, store, countSpend: spendCounter(CLOCK), moveSpend: spendMover(CLOCK) })
    },
    close: () => cli.close(),
  }
}

describe('a re-price racing a call that takes its newer usage, on PostgreSQL', () => {
  it("a background response's result: the calls, the rollups and today's spend still agree", async () => {
    const url = h.database()
    const t = await h.server({ url, config: { ...ADMIN_CONFIG, timezone: 'UTC' } })
    const store = h.store(url)
    const key = 'sk-pg-reprice-settle-aaaaaaaa'
    const rid = 'resp_pg_race_1'
    const r = await postJson(`${t.url}/v1/responses`, { model: MODEL, input: 'Research otters.', background: true, metadata: { id: rid } }, {
      authorization: `Bearer ${key}`,
    })
    expect(r.status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const row = (await store.get<{ id: number; estimated: number }>('SELECT id, estimated FROM calls WHERE response_id = @rid', { rid }))!
    expect(row.estimated).toBe(1)
    // A runtime price far above the list price: re-pricing with all=true moves the estimated call.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1000, output_mtok: 1000 } })).status).toBe(200)

    const held = await holdRows(h.store(url), 'SELECT id FROM calls WHERE id = @id', { id: row.id })
    const reprice = admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)
    await lockWaiters(store, 1)
    // The job's result, read through the proxy: its settlement queues behind the re-price.
    answers.set(rid, backgroundBody(rid, 'completed', USAGE))
    expect((await request(`${t.url}/v1/responses/${rid}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200)
    await lockWaiters(store, 2)
    await held.release()

    const rep = await reprice
    expect(rep.status).toBe(200)
    expect(rep.json().repriced).toBe(1)
    await until('the call took its real usage', async () =>
      (await store.get<{ estimated: number }>('SELECT estimated FROM calls WHERE id = @id', { id: row.id }))!.estimated === 0)
    const s = await sums(store)
    expect(s.day).toBeCloseTo(s.calls, 9)
    expect(s.fiveMin).toBeCloseTo(s.calls, 9)
    expect(t.server.ledger.spend.totals().day).toBeCloseTo(s.calls, 9)
  }, 90_000)

  it('an imported answer that grew: it takes its larger usage, and the rollups agree with the calls', async () => {
    const url = h.database()
    const t = await h.server({ url, config: { ...ADMIN_CONFIG, timezone: 'UTC' }, upstream: null })
    expect(await t.server.ledger.flushed()).toBe(true) // its schema made
    const store = h.store(url)
    const logs = answerLog(store, h.tempDir('burnrate-pg-reprice-import-'), 'claude-sonnet-4-5')
    const pricer = t.server.context.pricer
    expect(await logs.run(pricer, 8)).toMatchObject({ imported: 1 })
    const row = (await store.get<{ id: number }>("SELECT id FROM calls WHERE source = 'import'"))!
    // A runtime price far above the list price: re-pricing with all=true moves the imported call.
    expect((await admin(t.url, 'PUT', '/prices/anthropic/claude-sonnet-4-5', { body: { input_mtok: 1000, output_mtok: 1000 } })).status).toBe(200)

    const held = await holdRows(h.store(url), 'SELECT id FROM calls WHERE id = @id', { id: row.id })
    const reprice = admin(t.url, 'POST', '/prices/anthropic/claude-sonnet-4-5/reprice?all=true')
    await lockWaiters(store, 1)
    // The answer's final line, imported: it queues behind the re-price.
    const grown = logs.run(pricer, 2400)
    await lockWaiters(store, 2)
    await held.release()

    const rep = await reprice
    expect(rep.status).toBe(200)
    expect(rep.json().repriced).toBe(1)
    expect(await grown).toMatchObject({ imported: 0, updated: 1 })
    logs.close()
    const call = (await store.get<{ output_tokens: number; cost_usd: number }>('SELECT output_tokens, cost_usd FROM calls WHERE id = @id', { id: row.id }))!
    expect(call.output_tokens).toBe(2400)
    // Priced with the runtime price: 20,010 input tokens and 2,400 output at $1000 a million (Claude's cache reads at a tenth).
    expect(call.cost_usd).toBeCloseTo((10 + 20_000 * 0.1 + 2400) * 1000 / 1e6, 9)
    const s = await sums(store)
    expect(s.day).toBeCloseTo(s.calls, 9)
    expect(s.fiveMin).toBeCloseTo(s.calls, 9)
  }, 90_000)

  it('a re-price reading an imported call just before it grows prices the larger usage, or leaves it unpriced: never the smaller one', async () => {
    const url = h.database()
    const t = await h.server({ url, config: { ...ADMIN_CONFIG, timezone: 'UTC' }, upstream: null })
    expect(await t.server.ledger.flushed()).toBe(true) // its schema made
    const store = h.store(url)
    const model = 'claude-burnrate-race-test'
    const logs = answerLog(store, h.tempDir('burnrate-pg-reprice-stale-'), model)
    // `burnrate import` on another machine, whose copy of the runtime prices predates the one set below.
    const stalePricer = new Pricer()
    expect(await logs.run(stalePricer, 8)).toMatchObject({ imported: 1 })
    const call = () => store.get<{ id: number; output_tokens: number; cost_usd: number; priced: number }>(
      "SELECT id, output_tokens, cost_usd, priced FROM calls WHERE source = 'import'")
    const row = (await call())!
    expect(row.priced).toBe(0)
    expect((await admin(t.url, 'PUT', `/prices/anthropic/${model}`, { body: { input_mtok: 1000, output_mtok: 1000 } })).status).toBe(200)

    // The import takes the answer's final line first; the re-price, having read the call before that, updates it second.
    const held = await holdRows(h.store(url), 'SELECT id FROM calls WHERE id = @id', { id: row.id })
    const grown = logs.run(stalePricer, 2400)
    await lockWaiters(store, 1)
    const reprice = admin(t.url, 'POST', `/prices/anthropic/${model}/reprice`)
    await lockWaiters(store, 2)
    await held.release()
    expect(await grown).toMatchObject({ imported: 0, updated: 1 })
    const rep = await reprice
    expect(rep.status).toBe(200)
    logs.close()

    // The re-price left the call it no longer had as read: still unpriced, until the next re-price.
    expect(rep.json()).toMatchObject({ repriced: 0, unpriced: 1 })
    expect(await call()).toMatchObject({ output_tokens: 2400, cost_usd: 0, priced: 0 })
    expect((await admin(t.url, 'POST', `/prices/anthropic/${model}/reprice`)).json()).toMatchObject({ repriced: 1, unpriced: 0 })
    expect((await call())!.cost_usd).toBeCloseTo((10 + 20_000 * 0.1 + 2400) * 1000 / 1e6, 9)
    const s = await sums(store)
    expect(s.day).toBeCloseTo(s.calls, 9)
  }, 90_000)
})
