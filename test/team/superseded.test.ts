import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { freePort } from '../support/pg-harness'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A member's imported Claude Code answer that its proxy's record superseded is sent to the team
 * server again (its revision) at $0: it was still a request there, one answer two requests in the
 * team's dashboard. The member says which proxied call superseded it, and the team server counts
 * it as none.
 */

const ALICE = 'team-token-alice-superseded-01'
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())

let upstream: MockUpstream
let team: TestServer
let alice: TestServer
let home: string
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
  const port = await freePort()
  team = await startTestServer({ timezone: 'UTC', server: { port }, team: { members: [{ name: 'alice', token: ALICE }] } }, upstream.url)
  alice = await startTestServer({ timezone: 'UTC', import: { watch: false }, team: { url: `http://127.0.0.1:${port}`, token: ALICE, max_backoff_ms: 500 } }, upstream.url)
  home = mkdtempSync(join(tmpdir(), 'burnrate-team-superseded-'))
  mkdirSync(join(home, '.claude/projects/-home-alice-x'), { recursive: true })
})
afterAll(async () => {
  await alice.cleanup()
  await team.cleanup()
  await upstream.close()
  rmSync(home, { recursive: true, force: true })
})

describe("a member's imported answer its proxy's record superseded", () => {
  it('is no request on the team server either', async () => {
    const w = new LogWatcher({ db: alice.server.db, ledger: alice.server.ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, settleMs: 0 })
    writeFileSync(join(home, '.claude/projects/-home-alice-x/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', uuid: 'u1', cwd: '/home/alice/x', timestamp: new Date(Date.now() - 1000).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
    }) + '\n')
    expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported: 1 })
    await w.stop()

    // The proxy records the answer (and wakes the sender): the imported call goes superseded, or is
    // sent before and again at its revision, whichever comes first.
    expect((await postJson(`${alice.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-team-superseded-001' })).status).toBe(200)
    // The team server holds the proxied call, and the imported one at $0.
    await eventually(() => {
      const held = ledgerRows(team.dbFile)
      return held.length === 2 && held.some((r) => r.source === 'import' && r.cost_usd === 0 && r.superseded_by !== null)
    }, 30_000)
    const held = ledgerRows(team.dbFile)
    const proxied = held.find((r) => r.source === 'proxy')
    expect(held.find((r) => r.source === 'import').superseded_by).toBe(proxied.id)
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(1)
    expect(summary.today_spend_usd).toBeCloseTo(proxied.cost_usd, 12)
    const costs = (await request(`${team.url}/api/dashboard/costs?group_by=model&range=24h`)).json()
    expect(costs.rows.reduce((n: number, r: any) => n + r.requests, 0)).toBe(1)
  })
})
