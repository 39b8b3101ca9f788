import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { eventually, postJson, request } from '../support/http'
import { freePort, usePostgres } from '../support/pg-harness'
import { planNamed, twoResponses } from '../import/codex-plan-rollout'

/**
 * A team server on PostgreSQL: a member's Codex calls imported as money before a later event of
 * their rollout named the plan are re-classed on the member, and their revisions re-class them
 * there too (../team/reclassed-import.test.ts, on the team server's SQLite file).
 */
const ALICE = 'team-token-alice-pg-reclassed-1'
const h = usePostgres({ upstream: false })
const home = mkdtempSync(join(tmpdir(), 'burnrate-pg-team-reclassed-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))


it("a member's Codex calls re-classed as a plan's are plan usage on a team server on PostgreSQL", async () => {
  const url = h.database()
  const store = h.store(url)
  // Its schema made before the team server starts (it migrates a new database in the background).
  await migratePostgres(store)
  const port = await freePort()
  const team = await h.server({ url, config: { timezone: 'UTC', server: { port }, team: { members: [{ name: 'alice', token: ALICE }] } } })
  const alice = await h.server({ url: null, config: { timezone: 'UTC', import: { watch: false }, team: { url: `http://127.0.0.1:${port}`, token: ALICE, max_backoff_ms: 500 } } })
  const T = Date.now() - 60_000
  const folder = join(home, '.codex/sessions/2026/11/20')
  mkdirSync(folder, { recursive: true })
  const file = join(folder, 'rollout-2026-11-20T10-00-00-abc.jsonl')
  writeFileSync(file,
    twoResponses(T, 'abc', '/home/alice/x'))
  const w = new LogWatcher({ db: alice.server.db, ledger: alice.server.ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, settleMs: 0 })
  expect((await w.runOnce()).find((x) => x.agent === 'codex')).toMatchObject({ imported: 2 })
  const rows = () => store.all<any>("SELECT provider, billing FROM calls WHERE member = 'alice' ORDER BY ts")
  // Imported calls wake no sender: it finds them at its idle poll (team/sender.ts IDLE_POLL_MS, 30 s).
  await eventually(async () => (await rows()).length === 2, 120_000)
  expect((await request(`${team.url}/api/dashboard/summary`)).json().today_spend_usd).toBeGreaterThan(0)
  expect((await request(`${alice.url}/api/dashboard/summary`)).json().today_spend_usd).toBeGreaterThan(0)

  appendFileSync(file, planNamed(T))
  expect((await w.runOnce()).find((x) => x.agent === 'codex')).toMatchObject({ imported: 1, reclassed: 2 })
  await w.stop()
  await eventually(async () => {
    const held = await rows()
    return held.length === 3 && held.every((r) => r.provider === 'chatgpt' && r.billing === 'subscription')
  }, 30_000)
  const day = (await store.get<{ money: number; n: number }>('SELECT sum(cost_usd) AS money, sum(requests) AS n FROM dash_day'))!
  expect([Number(day.money), Number(day.n)]).toEqual([0, 3])
  expect((await request(`${team.url}/api/dashboard/summary`)).json()).toMatchObject({ today_spend_usd: 0, today_requests: 3 })
  // The member's own (its watcher imported them in process): no money left today either.
  expect(Math.abs((await request(`${alice.url}/api/dashboard/summary`)).json().today_spend_usd)).toBeLessThanOrEqual(1e-12)
})

it('an older revision of a re-classed call, as money, arriving late is a duplicate on a team server on PostgreSQL', async () => {
  const url = h.database()
  const store = h.store(url)
  await migratePostgres(store)
  const team = await h.server({ url, config: { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } } })
  const ingest = async (calls: unknown[]) => (await postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })).json()
  const t = new Date(Date.now() - 60_000).toISOString()
  const call = (cost: number, over: Record<string, unknown> = {}) => ({
    id: 1, t, provider: 'openai', model: 'gpt-5-codex', api_key_hash: '', key_hint: '', tenant: '', agent: 'codex', session: 'abc', status: 200,
    streamed: false, input_tokens: 5000, output_tokens: 400, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost,
    priced: true, estimated: false, latency_ms: 0, response_id: '', source: 'import', billing: 'api', project: '/home/dev/x', member: '', ...over,
  })
  expect(await ingest([call(0.25)])).toMatchObject({ accepted: 1, rejected: [] })
  expect(await ingest([call(0.3, { revision: 1 })])).toMatchObject({ revised: 1, rejected: [] })
  expect(await ingest([call(0.3, { revision: 2, provider: 'chatgpt', billing: 'subscription' })])).toMatchObject({ revised: 1, rejected: [] })
  // The re-priced revision and the call as first recorded, as money, arriving late (a resend).
  expect(await ingest([call(0.3, { revision: 1 })])).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
  expect(await ingest([call(0.25)])).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
  const held = await store.all<any>("SELECT provider, billing, cost_usd, revision FROM calls WHERE member = 'alice'")
  expect(held.map((r) => [r.provider, r.billing, Number(r.cost_usd), Number(r.revision)])).toEqual([['chatgpt', 'subscription', 0.3, 2]])
  const day = (await store.get<{ money: number; n: number }>('SELECT sum(cost_usd) AS money, sum(requests) AS n FROM dash_day'))!
  expect([Number(day.money), Number(day.n)]).toEqual([0, 1])
  expect((await request(`${team.url}/api/dashboard/summary`)).json()).toMatchObject({ today_spend_usd: 0, today_requests: 1 })
})
