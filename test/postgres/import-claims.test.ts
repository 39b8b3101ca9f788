import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A logged call without a provider id (Codex) is matched to a proxied call by its counts and time,
 * never to one already matched: on PostgreSQL, not even to one another instance matched (another
 * machine's call with the same counts is another call, whose money must be counted).
 */
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-responses/responses-nonstream-reasoning.json') }),
})

/** A Codex rollout of one call with the proxied fixture's counts, as Codex writes it. */
function codexLog(dir: string, name: string, ts: number): string {
  const root = join(dir, 'codex')
  mkdirSync(join(root, '2026'), { recursive: true })
  const usage = { input_tokens: 11, cached_input_tokens: 0, output_tokens: 327, reasoning_output_tokens: 320, total_tokens: 338 }
  writeFileSync(join(root, `2026/rollout-${name}.jsonl`), [
    { timestamp: new Date(ts).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-nano', cwd: `/home/${name}/y` } },
    { timestamp: new Date(ts + 2000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage } } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
  return root
}

it("a logged call is not matched to a proxied call another instance already matched to its own log", async () => {
  const url = h.database()
  const store = h.store(url)
  const a = await h.server({ url })
  const b = await h.server({ url })
  // Machine A's Codex goes through A's proxy, and logs the call.
  expect((await postJson(`${a.url}/v1/responses`, { model: 'gpt-5-nano', input: 'hi' }, { authorization: 'Bearer sk-test-0000000000001' })).status).toBe(200)
  expect(await a.server.ledger.flushed()).toBe(true)
  const proxied = (await store.get<{ id: number; ts: number; cost_usd: number }>('SELECT id, ts, cost_usd FROM calls'))!
  const pricer = new Pricer()
  const now = Number(proxied.ts) + 3_600_000
  const logsA = codexLog(a.dir, 'a', Number(proxied.ts))
  expect(await importLogs(a.server.db, { agent: 'codex', paths: [logsA], pricer, now, store, countSpend, moveSpend })).toMatchObject({ matched: 1, imported: 0 })

  // Machine B's Codex, not connected to Burnrate, made a call with the same counts a second later.
  const logsB = codexLog(b.dir, 'b', Number(proxied.ts) + 1000)
  const sb = await importLogs(b.server.db, { agent: 'codex', paths: [logsB], pricer, now, store, countSpend, moveSpend })
  expect(sb).toMatchObject({ matched: 0, imported: 1 })
  const calls = await store.all<{ source: string; cost_usd: number }>('SELECT source, cost_usd FROM calls ORDER BY id')
  expect(calls.map((c) => c.source)).toEqual(['proxy', 'import'])
  expect(sb.cost_usd).toBe(calls[1].cost_usd)
  expect(calls[1].cost_usd).toBeGreaterThan(0)
  const day = (await store.get<{ n: number; c: number }>('SELECT sum(requests) AS n, sum(cost_usd) AS c FROM dash_day'))!
  expect(Number(day.n)).toBe(2)
  expect(Number(day.c)).toBeCloseTo(calls[0].cost_usd + calls[1].cost_usd, 12)

  // A's own log read by B too (a shared home): still the proxied call's, not stored again.
  expect(await importLogs(b.server.db, { agent: 'codex', paths: [logsA], pricer, now, store, countSpend, moveSpend })).toMatchObject({ matched: 1, imported: 0 })
  expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(2)
  expect(await store.all('SELECT call_id FROM import_claims')).toEqual([{ call_id: proxied.id }])

  // Retention deletes the proxied call, and its claim with it (its session ended: a live one's calls are kept).
  await store.run("UPDATE calls SET session = ''")
  expect(await a.server.ledger.prune(now, 1000)).toBeGreaterThan(0)
  expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls WHERE id = @id', { id: proxied.id }))!.n).toBe(0)
  expect(await store.all('SELECT call_id FROM import_claims')).toEqual([])
})
