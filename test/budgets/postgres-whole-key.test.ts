import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { postgresBin } from '../support/postgres'
import { NANO_COST, NANO_FIXTURE } from './support'

/**
 * A config rule on a whole key is written in the config alone (README: Budgets): its spend rows in
 * the shared PostgreSQL name the key by its hash, never the key. They named it raw in `rule_key`,
 * so every reader of the team's database (and each dump of it) had the key.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-proj-PGWHOLEKEYSECRET-0123456789'
const call = (url: string) => postJson(`${url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }, { authorization: `Bearer ${KEY}` })

describe('a config rule on a whole key, with the budget state in PostgreSQL', () => {
  it('keeps its spend in rows that name the key by its hash, and still refuses past the limit on every instance', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: NANO_COST * 1.5, action: 'block' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    expect((await call(a.url)).status).toBe(200)
    const store = h.store(url)
    const rows = await eventually(async () => {
      const r = await store.all<{ rule_key: string; spent_usd: number }>('SELECT rule_key, spent_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(KEY) })
      return r.length > 0 && r.every((x) => x.spent_usd > 0) ? r : undefined
    })
    expect((await call(b.url)).status).toBe(200)
    // Spend 2 calls > 1.5 calls' limit: refused on either instance.
    await eventually(async () => ((await call(a.url)).status === 429 ? true : undefined))
    expect((await call(b.url)).status).toBe(429)
    for (const r of rows!) expect(r.rule_key).not.toContain('PGWHOLEKEYSECRET')
    const dump = execFileSync('pg_dump', ['--data-only', url], { encoding: 'utf8', env: { ...process.env, PATH: `${postgresBin() ?? ''}:${process.env.PATH}` } })
    expect(dump).toContain('budget_spend')
    expect(dump.includes('PGWHOLEKEYSECRET')).toBe(false)
  })

  it('an older database: its rows naming the key are renamed by the upgrade, their spend kept (a key past its limit stays refused)', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: NANO_COST * 1.5, action: 'block' }, { api_key_pattern: 'sk-proj-*', daily_limit_usd: 100, action: 'block' }] } }
    const a = await h.server({ url, config })
    expect((await call(a.url)).status).toBe(200)
    expect((await call(a.url)).status).toBe(200)
    const store = h.store(url)
    await eventually(async () => {
      const r = await store.all<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND rule_key LIKE '[\"sha256:%'", { k: hashKey(KEY) })
      return r.length > 0 && r.every((x) => x.spent_usd >= NANO_COST * 2 * (1 - 1e-9)) ? r : undefined
    })
    await a.server.close(2000)
    // As a build before migration 18 left it: the whole key in rule_key, as JSON.stringify wrote it.
    const raw = JSON.stringify([KEY, null, null, null, null])
    await store.run("UPDATE budget_spend SET rule_key = @raw WHERE rule_key LIKE '[\"sha256:%'", { raw })
    // (and before the migrations after it: the schema's version is its highest row)
    await store.run('DELETE FROM burnrate_schema WHERE version >= 18')
    await store.run('DROP TABLE import_claims')
    const before = await store.all<{ rule_key: string }>('SELECT rule_key FROM budget_spend ORDER BY rule_key')
    expect(before.map((r) => r.rule_key)).toContain(raw)
    const b = await h.server({ url, config })
    expect((await call(b.url)).status).toBe(429)
    const after = await store.all<{ rule_key: string }>('SELECT rule_key FROM budget_spend ORDER BY rule_key')
    expect(after.some((r) => r.rule_key.includes('PGWHOLEKEYSECRET'))).toBe(false)
    expect(after.map((r) => r.rule_key)).toContain(JSON.stringify([`sha256:${hashKey(KEY)}`, null, null, null, null]))
  })
})
