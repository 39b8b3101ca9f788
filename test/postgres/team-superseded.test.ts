import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { freePort, usePostgres } from '../support/pg-harness'

/**
 * A team server on PostgreSQL: a member's imported Claude Code answer its proxy's record superseded
 * is no request there either (../team/superseded.test.ts, on the team server's SQLite file).
 */

const ALICE = 'team-token-alice-pg-superseded-1'
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const home = mkdtempSync(join(tmpdir(), 'burnrate-pg-team-superseded-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))

it("a member's imported answer its proxy's record superseded is no request on a team server on PostgreSQL", async () => {
  const url = h.database()
  const store = h.store(url)
  const port = await freePort()
  const team = await h.server({ url, config: { timezone: 'UTC', server: { port }, team: { members: [{ name: 'alice', token: ALICE }] } } })
  const alice = await h.server({ url: null, config: { timezone: 'UTC', import: { watch: false }, team: { url: `http://127.0.0.1:${port}`, token: ALICE, max_backoff_ms: 500 } } })
  mkdirSync(join(home, '.claude/projects/-home-alice-x'), { recursive: true })
  writeFileSync(join(home, '.claude/projects/-home-alice-x/s.jsonl'), JSON.stringify({
    type: 'assistant', sessionId: 's', uuid: 'u1', cwd: '/home/alice/x', timestamp: new Date(Date.now() - 1000).toISOString(), requestId: 'req_1',
    message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
  }) + '\n')
  const w = new LogWatcher({ db: alice.server.db, ledger: alice.server.ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, settleMs: 0 })
  expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported: 1 })
  await w.stop()
  expect((await postJson(`${alice.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-pg-team-superseded-01' })).status).toBe(200)
  const rows = () => store.all<any>("SELECT id, source, cost_usd, superseded_by FROM calls WHERE member = 'alice' ORDER BY id")
  await eventually(async () => {
    const held = await rows()
    return held.length === 2 && held.some((r) => r.source === 'import' && r.cost_usd === 0 && r.superseded_by !== null)
  }, 30_000)
  const held = await rows()
  expect(Number(held.find((r) => r.source === 'import').superseded_by)).toBe(Number(held.find((r) => r.source === 'proxy').id))
  expect(Number((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n)).toBe(1)
  expect((await request(`${team.url}/api/dashboard/summary`)).json().today_requests).toBe(1)
})
