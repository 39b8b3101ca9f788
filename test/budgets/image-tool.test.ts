import { beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { callsOf, pgBudgetServer, replayJson, spentToday } from './support'

/**
 * The Responses API's image_generation tool: each image is billed as output image tokens of the
 * tool's GPT Image model, on top of the mainline model's tokens (the recorded gpt-5-nano answer:
 * $0.00095 of tokens, $0.01088 for its low 1024x1024 image). A `reserve: max_tokens` rule must
 * reserve the image too, or calls in flight together take the key far past its limit; on SQLite
 * and on PostgreSQL alike.
 */

const FIXTURE = 'openai-responses/responses-nonstream-image-generation-tool.json'
const LIMIT = 0.05
const TOOL = { type: 'image_generation', quality: 'low', size: '1024x1024' }
const BODY = { model: 'gpt-5-nano', input: 'Draw a cat on a windowsill', tools: [TOOL], max_output_tokens: 2000 }
const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-img-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } }

const h = usePostgres()
beforeAll(() => replayJson(h.upstream, FIXTURE, { headerDelayMs: 300 }))

/** 20 calls at once; how many were admitted and what one cost. */
async function burst(t: TestServer, key: string, stored: () => Promise<number> | number): Promise<{ ok: number; each: number }> {
  const replies = await Promise.all(Array.from({ length: 20 }, () => postJson(`${t.url}/v1/responses`, BODY, { authorization: `Bearer ${key}` })))
  await eventually(async () => expect(await stored()).toBe(20), 20_000)
  const ok = replies.filter((r) => r.status === 200).length
  expect(ok).toBeGreaterThan(0)
  expect(replies.filter((r) => r.status === 429).length).toBe(20 - ok)
  const each = callsOf(t, key).find((c) => c.status === 200)?.cost_usd ?? 0
  return { ok, each }
}

describe('reserve: max_tokens, 20 Responses calls at once with the image_generation tool', () => {
  it('SQLite: each reserves its image, and the spend stays within the limit', async () => {
    const key = 'sk-img-sqlite-aaaaaaaa-0001'
    const t = await h.server({ url: null, config })
    const { ok, each } = await burst(t, key, () => callsOf(t, key).length)
    expect(each).toBeGreaterThan(0.0118) // the image's $0.01088 with the tokens
    expect(spentToday(t, key)).toBeCloseTo(ok * each, 12)
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })

  it('PostgreSQL: the same', async () => {
    const key = 'sk-img-postgres-aaaaaaaa-0002'
    const t = await pgBudgetServer(h, h.database(), config)
    const k = hashKey(key)
    const sum = async () => (await t.store.get<{ n: number; cost: number | null }>('SELECT COUNT(*)::int AS n, SUM(cost_usd) AS cost FROM calls WHERE api_key_hash = @k', { k }))!
    await burst(t, key, async () => (await sum()).n)
    const spent = (await sum()).cost ?? 0
    expect(spent).toBeGreaterThan(0.0118)
    expect(spent).toBeLessThanOrEqual(LIMIT)
  })
})
