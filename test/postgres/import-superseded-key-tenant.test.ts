import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { ANSWER, BODY } from '../support/superseded'

/**
 * On PostgreSQL, a key's tenant read with the meters (every instance's calls, at each re-read) is
 * its newest call's of those still requests: with a superseded call at the same millisecond as the
 * key's newest call left, stored after it, the read gave the key the superseded call's tenant.
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(ANSWER) }) })
const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))

describe('a superseded call at the same time as its key\'s newest call left, on PostgreSQL', () => {
  it('leaves the key the tenant of that call in an instance reading the meters afterwards', async () => {
    const url = h.database()
    const store = h.store(url)
    const config = { ...ADMIN_CONFIG, budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }
    const a = await h.server({ url, config })
    const { budgetsOf } = await import('../../src/main/budgets')
    await eventually(() => budgetsOf(a.server.context).feed!.stats.reloads > 0, 20_000)
    const dir = h.tempDir('burnrate-pg-superseded-key-tenant-')
    const at = Date.now() - 60_000
    const cli = openDatabase(join(dir, 'cli.db'))
    const pricer = new Pricer()
    // Two answers at the same millisecond: another one first under tenant acme, then the one the proxy records too, under none.
    for (const [name, id, tenant] of [['other', 'msg_other_answer', 'acme'], ['sup', BODY.id, '']] as const) {
      mkdirSync(join(dir, name, 'p'), { recursive: true })
      writeFileSync(join(dir, name, 'p/s.jsonl'), JSON.stringify({
        type: 'assistant', sessionId: name, cwd: '/home/dev/x', timestamp: new Date(at).toISOString(), requestId: `req_${name}`,
        message: { ...BODY, id, usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n')
      expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, name)], pricer, tenant, store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    }
    cli.close()

    expect((await postJson(`${a.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-pg-key-tenant-001' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    await eventually(async () => (await store.get<{ s: number | null }>('SELECT superseded_by AS s FROM calls WHERE response_id = @id AND source = \'import\'', { id: BODY.id }))!.s !== null, 20_000)

    // An instance that reads the meters now: the keyless key's one request left is acme's call.
    const b = await h.server({ url, config })
    await eventually(() => budgetsOf(b.server.context).feed!.stats.reloads > 0, 20_000)
    const k = await keyless(b.url)
    expect({ requests_month: k?.requests_month, last_seen_at: k?.last_seen_at, tenant: k?.tenant }).toEqual({ requests_month: 1, last_seen_at: new Date(at).toISOString(), tenant: 'acme' })
  })
})
