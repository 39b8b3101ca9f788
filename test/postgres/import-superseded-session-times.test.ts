import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL, an imported call the proxy's record superseded when it was its session's last
 * call gives the session's last_seen_at back to its last call left: the dashboard kept its time
 * and counted the session active with it until the rollups were rebuilt.
 * (SQLite: ../import/superseded-session-times.test.ts.)
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())

describe("an imported call superseded when it was its session's last, on PostgreSQL", () => {
  it("gives the session's last_seen_at back to its last call left: idle, not active", async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, config: { timezone: 'UTC' } })
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-superseded-session-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    const now = Date.now()
    const older = now - 20 * 60_000
    const line = (i: number, at: number, id: string) => JSON.stringify({
      type: 'assistant', sessionId: 'times', uuid: `u-${i}`, cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: `req_${i}`,
      message: { ...BODY, id, usage: { ...BODY.usage, output_tokens: 1 } },
    })
    writeFileSync(join(dir, 'projects/p/times.jsonl'), `${line(0, older, 'msg_older_answer')}\n${line(1, now - 1000, BODY.id)}\n`)
    const cli = openDatabase(join(dir, 'cli.db'))
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer(), store, countSpend, moveSpend })).toMatchObject({ imported: 2 })
    cli.close()
    const session = async () => (await request(`${t.url}/api/dashboard/sessions`)).json().sessions.find((s: any) => s.session === 'times')
    await eventually(async () => (await session())?.requests === 2, 20_000)

    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-times-0000000002' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    await eventually(async () => (await store.get<{ s: number | null }>("SELECT superseded_by AS s FROM calls WHERE response_id = @rid AND source = 'import'", { rid: BODY.id }))!.s !== null, 20_000)
    expect(await session()).toMatchObject({ requests: 1, started_at: new Date(older).toISOString(), last_seen_at: new Date(older).toISOString(), status: 'idle' })
    // Only the proxy's record's session is active.
    expect((await request(`${t.url}/api/dashboard/summary`)).json().active_sessions).toBe(1)
  })
})
