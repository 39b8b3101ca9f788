import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A member's ledger does not cut every text field it records: the provider's answer id (as the
 * provider sent it), and an imported call's project, session and answer id (as the agent logged
 * them). The team server refused a call with a text field over 1,000 characters (in `rejected`),
 * and the member's sender skips refused calls: that call's money never reached the team's totals.
 * The team server stores those fields cut to 200 characters anyway: the call arrives, cut so
 * (the sender cuts them as the team server stores them, and the team server cuts what an older
 * member sends whole rather than refusing it).
 */
const ALICE = 'team-token-alice-long-fields-01'
const KEY = 'sk-proj-alice-long-fields-1111aaaa'
const LONG_ID = 'chatcmpl-' + 'a'.repeat(1500)

describe('a call with a text field longer than the team server took', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it("reaches the team server, its money counted there, the field cut to what it stores", async () => {
    const answer = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString())
    answer.id = LONG_ID
    const upstream: MockUpstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }))
    cleanups.push(() => upstream.close())

    // The member's ledger already holds an imported Claude Code call whose folder, session and
    // answer id are long (as the agent logged them).
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-long-fields-'))
    const logs = mkdtempSync(join(tmpdir(), 'burnrate-long-fields-logs-'))
    cleanups.push(() => rmSync(logs, { recursive: true, force: true }))
    const cwd = '/home/dev/' + 'p'.repeat(1200)
    const session = 's'.repeat(1100)
    const msgId = 'msg_' + 'm'.repeat(1300)
    mkdirSync(join(logs, 'proj'), { recursive: true })
    writeFileSync(
      join(logs, 'proj/session.jsonl'),
      JSON.stringify({
        type: 'assistant', sessionId: session, cwd, timestamp: new Date(Date.now() - 11 * 60_000).toISOString(),
        message: { id: msgId, model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 100_000, output_tokens: 10_000 } },
      }) + '\n',
    )
    const db = openDatabase(join(dir, DB_FILE))
    const imported = await importLogs(db, { agent: 'claude-code', paths: [logs], pricer: new Pricer() })
    db.close()
    expect(imported).toMatchObject({ imported: 1 })
    expect(imported.cost_usd).toBeGreaterThan(0)

    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    // The way to the team server, keeping the longest text the member sent in any call's field.
    let longest = 0
    const relay = http.createServer(async (req, res) => {
      const parts: Buffer[] = []
      for await (const c of req) parts.push(c as Buffer)
      const body = Buffer.concat(parts)
      for (const c of JSON.parse(body.toString()).calls ?? []) for (const v of Object.values(c)) if (typeof v === 'string') longest = Math.max(longest, v.length)
      const r = await fetch(team.url + req.url, { method: req.method, headers: req.headers as Record<string, string>, body })
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()))
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => relay.close(r)))
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`
    const member: TestServer = await startTestServer({ timezone: 'UTC', team: { url: relayUrl, token: ALICE, max_backoff_ms: 500 } }, upstream.url, dir)
    cleanups.push(() => member.cleanup())

    // A proxied call whose answer id is 1,509 characters.
    const r = await postJson(`${member.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
    expect(r.status).toBe(200)
    const own = (await eventually(() => {
      const rows = ledgerRows(member.dbFile)
      return rows.length === 2 ? rows : undefined
    }))!
    expect(own[1].response_id).toBe(LONG_ID)
    expect(own.every((c: { cost_usd: number }) => c.cost_usd > 0)).toBe(true)

    // Both calls reach the team server, none refused, and the team's totals hold the member's money.
    const health = await eventually(async () => {
      const h = (await request(`${member.url}/api/health`)).json().team
      return h?.backlog === 0 && h.sent + h.rejected >= 2 ? h : undefined
    })
    expect(health).toMatchObject({ sent: 2, rejected: 0, last_error: null })
    const stored = ledgerRows(team.dbFile, "member = 'alice'")
    expect(stored.map((c: { origin_id: number; cost_usd: number }) => [c.origin_id, c.cost_usd])).toEqual(own.map((c: { id: number; cost_usd: number }) => [c.id, c.cost_usd]))
    expect(stored[0]).toMatchObject({ project: cwd.slice(0, 200), session: session.slice(0, 200), response_id: msgId.slice(0, 200), source: 'import' })
    expect(stored[1]).toMatchObject({ response_id: LONG_ID.slice(0, 200), source: 'proxy' })
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBeCloseTo(own[0].cost_usd + own[1].cost_usd, 12)
    // Sent cut as the team server stores it: a team server of an earlier build (which refused a
    // field over 1,000 characters) takes them too.
    expect(longest).toBe(200)
  })

  it('sent whole by a member of an earlier build, is stored cut, not refused; sent again, it is the same call', async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const t = new Date(Date.now() - 1000).toISOString()
    const whole: IngestCall = {
      id: 1, t, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash(KEY), key_hint: 'sk-…aaaa', tenant: 't'.repeat(5000), agent: 'a'.repeat(5000),
      session: 's'.repeat(5000), status: 200, streamed: false, input_tokens: 100, output_tokens: 10, cache_read_tokens: 0, cache_write_tokens: 0,
      reasoning_tokens: 0, cost_usd: 0.25, priced: true, estimated: false, latency_ms: 5, response_id: LONG_ID, source: 'proxy', billing: 'api',
      project: '/'.repeat(5000), member: '', endpoint: 'e'.repeat(5000), error: 'x'.repeat(5000),
    }
    const auth = { authorization: `Bearer ${ALICE}` }
    const first = await postJson(`${team.url}/api/ingest`, { calls: [whole] }, auth)
    expect(first.json()).toEqual({ accepted: 1, duplicates: 0, revised: 0, rejected: [] })
    expect(ledgerRows(team.dbFile)[0]).toMatchObject({
      origin_id: 1, cost_usd: 0.25, tenant: 't'.repeat(200), agent: 'a'.repeat(200), session: 's'.repeat(200), project: '/'.repeat(200),
      response_id: LONG_ID.slice(0, 200), endpoint: 'e'.repeat(1000), error: 'x'.repeat(1000),
    })
    // Sent again whole (an answer lost), and revised (re-priced on the member) as a member of this build sends it, cut: one call.
    const again = await postJson(`${team.url}/api/ingest`, { calls: [whole] }, auth)
    expect(again.json()).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    const cut = { ...whole, tenant: whole.tenant.slice(0, 200), session: whole.session.slice(0, 200), response_id: LONG_ID.slice(0, 200), cost_usd: 0.5, revision: 1 }
    const revised = await postJson(`${team.url}/api/ingest`, { calls: [cut] }, auth)
    expect(revised.json()).toEqual({ accepted: 0, duplicates: 0, revised: 1, rejected: [] })
    expect(ledgerRows(team.dbFile).map((c: { cost_usd: number }) => c.cost_usd)).toEqual([0.5])
    expect((await request(`${team.url}/api/dashboard/summary`)).json().today_spend_usd).toBeCloseTo(0.5, 12)
  })
})
