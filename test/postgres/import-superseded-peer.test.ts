import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Two instances on one PostgreSQL: an imported call the proxy's record on one of them superseded
 * is no request of its key on the other either, without a restart. The cost move sent over the
 * calls feed carried its money and not its request, so the other instance's requests_month (the
 * admin API) kept counting it until it read its meters again.
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))

describe('an imported call superseded on one instance, seen from another', () => {
  it('is no request of its key in the other instance\'s requests_month', async () => {
    const url = h.database()
    const store = h.store(url)
    const config = { ...ADMIN_CONFIG, budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const { budgetsOf } = await import('../../src/main/budgets')
    for (const t of [a, b]) {
      const feed = budgetsOf(t.server.context).feed!
      await eventually(() => feed.stats.reloads > 0, 20_000)
    }
    const keylessSpent = async (t: typeof a) => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
    }
    const dir = h.tempDir('burnrate-pg-superseded-peer-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    writeFileSync(join(dir, 'projects/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(Date.now() - 60_000).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
    }) + '\n')
    const cli = openDatabase(join(dir, 'cli.db'))
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer(), store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    cli.close()
    const partial = (await store.get<{ cost_usd: number }>("SELECT cost_usd FROM calls WHERE source = 'import'"))!
    expect(partial.cost_usd).toBeGreaterThan(0)
    // Both instances heard the imported call: one request of the keyless key each.
    for (const t of [a, b]) await eventually(async () => (await keylessSpent(t)) === partial.cost_usd && (await keyless(t.url))?.requests_month === 1, 20_000)

    // The proxy on `a` records the answer and supersedes the imported call as it does.
    expect((await postJson(`${a.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-superseded-peer-01' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    await eventually(async () => (await store.get<{ s: number | null }>("SELECT superseded_by AS s FROM calls WHERE source = 'import'"))!.s !== null, 20_000)
    // `b` heard the move once its money left the keyless key's meter.
    for (const t of [a, b]) await eventually(async () => (await keylessSpent(t)) === 0, 20_000)
    expect((await keyless(a.url))?.requests_month ?? 0).toBe(0)
    expect((await keyless(b.url))?.requests_month ?? 0).toBe(0)
  })
})

describe("an imported call superseded on one instance when it was its key's newest, seen from another", () => {
  it("gives the key's last_seen_at and tenant back to its newest call left there too, as a read of the meters does", async () => {
    const url = h.database()
    const store = h.store(url)
    const config = { ...ADMIN_CONFIG, budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const { budgetsOf } = await import('../../src/main/budgets')
    for (const t of [a, b]) await eventually(() => budgetsOf(t.server.context).feed!.stats.reloads > 0, 20_000)
    const dir = h.tempDir('burnrate-pg-superseded-peer-last-')
    const older = Date.now() - 120_000
    const newest = Date.now() - 60_000
    const cli = openDatabase(join(dir, 'cli.db'))
    // An older answer under tenant acme, then the newest (the one the proxy records too) under none.
    for (const [name, id, at, tenant] of [['older', 'msg_older_answer', older, 'acme'], ['newest', BODY.id, newest, '']] as const) {
      mkdirSync(join(dir, name, 'p'), { recursive: true })
      writeFileSync(join(dir, name, 'p/s.jsonl'), JSON.stringify({
        type: 'assistant', sessionId: name, cwd: '/home/dev/x', timestamp: new Date(at).toISOString(), requestId: `req_${name}`,
        message: { ...BODY, id, usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n')
      expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, name)], pricer: new Pricer(), tenant, store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    }
    cli.close()
    const view = (k: any) => (k ? { requests_month: k.requests_month, last_seen_at: k.last_seen_at, tenant: k.tenant } : null)
    for (const t of [a, b]) await eventually(async () => (await keyless(t.url))?.requests_month === 2, 20_000)

    expect((await postJson(`${a.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-superseded-peer-02' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    for (const t of [a, b]) await eventually(async () => (await keyless(t.url))?.requests_month === 1, 20_000)
    const left = { requests_month: 1, last_seen_at: new Date(older).toISOString(), tenant: 'acme' }
    expect(view(await keyless(a.url))).toEqual(left)
    expect(view(await keyless(b.url))).toEqual(left)
  })
})
