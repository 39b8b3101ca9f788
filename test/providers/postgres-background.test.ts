import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually, postJson, request } from '../support/http'
import { localValue, until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type Answers, MODEL, OUTPUT, REAL_COST, USAGE, backgroundBody, backgroundResponder } from './background-support'

// PostgreSQL (`storage.url`): a background response created through one instance and polled
// through another. The creating call takes its real usage and cost once, in the shared ledger,
// the rollups and the block rule's shared spend row (README: What is metered, and how).

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgbg-key-aaaaaaaaaaaa'

const close = (a: number, b: number) => Math.abs(a - b) <= Math.max(Math.abs(a), Math.abs(b)) * 1e-9

describe('background responses on PostgreSQL', () => {
  it('polled through another instance: the call, the rollups and the shared spend row take the real cost once', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbg-*', daily_limit_usd: 1000, action: 'block' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const store = h.store(url)
    const id = 'resp_pg_background_0001'

    const created = await postJson(`${a.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters.', background: true, metadata: { id } }, {
      authorization: `Bearer ${KEY}`,
    })
    expect(created.status).toBe(200)
    const call = () =>
      store.get<{ id: number; cost_usd: number; estimated: number; input_tokens: number; output_tokens: number }>(
        "SELECT id, cost_usd, estimated, input_tokens, output_tokens FROM calls WHERE response_id = @id AND endpoint = 'responses'",
        { id },
      )
    await until('the creating call is stored', async () => (await call()) !== undefined)
    const queued = (await call())!
    expect(queued.estimated).toBe(1)
    const spend = async () =>
      (await store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(KEY) }))
        ?.spent_usd
    await until('the spend row counts the estimate', async () => close((await spend()) ?? -1, queued.cost_usd))

    answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
    for (const t of [b, a]) expect((await request(`${t.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await until('the call took its real usage', async () => (await call())!.estimated === 0)
    const done = (await call())!
    expect(done).toMatchObject({ input_tokens: 40_000, output_tokens: 120_000 })
    expect(close(done.cost_usd, REAL_COST)).toBe(true)
    // Both polls are recorded at $0; the call moved once, whichever instance saw the answer first.
    await until('both polls are stored', async () =>
      (await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE response_id = @id AND endpoint = 'responses.retrieve' AND cost_usd = 0", { id }))!.n === 2,
    )
    expect(close((await spend())!, REAL_COST)).toBe(true)
    const costs = await eventually(async () => {
      const rows = (await request(`${a.url}/api/dashboard/costs?group_by=model`)).json().rows
      const m = rows.find((r: any) => r.key === MODEL)
      return m && close(m.cost_usd, REAL_COST) ? m : undefined
    })
    expect(costs).toMatchObject({ input_tokens: 40_000, output_tokens: 120_000, cache_read_tokens: 10_000 })
  })

  it('PostgreSQL away when the final answer passes: the call takes its real usage once it is back', async () => {
    const { call } = await finishedWhileAway('resp_pg_background_away_0001')
    await until('the call took its real usage', async () => (await call().catch(() => undefined))?.estimated === 0, 90_000)
    const done = (await call())!
    expect(done.output_tokens).toBe(120_000)
    expect(close(done.cost_usd, REAL_COST)).toBe(true)
  }, 120_000)

  it('restarted while the move waits to be tried again: the next start tries it, and the call takes its real usage', async () => {
    const id = 'resp_pg_background_restart_0001'
    const { a, url, call } = await finishedWhileAway(id, async (a) => {
      // Kept in the data folder's file, not only in memory...
      expect(localValue(a.dbFile, `SELECT count(*) FROM background_pending WHERE response_id = '${id}'`)).toBe(1)
      // ...so stopping the server before the retry does not lose it.
      await a.stop()
    })
    expect((await call())!.estimated).toBe(1)
    const again = await h.server({ url, config: { timezone: 'UTC' }, dir: a.dir })
    await until('the call took its real usage', async () => (await call().catch(() => undefined))?.estimated === 0, 90_000)
    const done = (await call())!
    expect(done.output_tokens).toBe(120_000)
    expect(close(done.cost_usd, REAL_COST)).toBe(true)
    await until('the kept move is gone', () => localValue(again.dbFile, `SELECT count(*) FROM background_pending WHERE response_id = '${id}'`) === 0)
  }, 120_000)
})

/**
 * A background response created through a server, finished, and read once through it while
 * PostgreSQL is away: the move fails and a retry is scheduled; `meanwhile` runs then, before
 * PostgreSQL is started again.
 */
async function finishedWhileAway(id: string, meanwhile?: (a: TestServer) => Promise<void>) {
  const url = h.database()
  const lines: string[] = []
  const a = await h.server({ url, config: { timezone: 'UTC' }, log: createLogger('info', (l) => lines.push(l)) })
  const store = h.store(url)
  const created = await postJson(`${a.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters.', background: true, metadata: { id } }, {
    authorization: `Bearer ${KEY}`,
  })
  expect(created.status).toBe(200)
  const call = () =>
    store.get<{ cost_usd: number; estimated: number; output_tokens: number }>(
      "SELECT cost_usd, estimated, output_tokens FROM calls WHERE response_id = @id AND endpoint = 'responses'",
      { id },
    )
  await until('the creating call is stored', async () => (await call()) !== undefined)
  answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
  h.pg.stopServer()
  try {
    // The client reads the finished response once, while PostgreSQL is away: the move fails, and is tried again.
    expect((await request(`${a.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await until('a retry is scheduled', () => lines.some((l) => l.includes(`background response ${id}: its real usage is recorded again`)))
    await meanwhile?.(a)
  } finally {
    h.pg.startServer()
  }
  return { a, url, call }
}
