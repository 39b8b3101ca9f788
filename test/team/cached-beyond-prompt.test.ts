import { afterAll, describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An OpenAI-style answer whose usage counts more cached prompt tokens than prompt tokens (the
 * cached ones are part of the prompt count): the price library cannot split such a prompt, and the
 * call was recorded unpriced at $0, its money missing from every total, and the team server refused
 * it (cache tokens beyond input_tokens), so it never reached the team either. The cached count is
 * now limited to the prompt, as the other providers' readers limit it: the whole prompt cached.
 */
const ALICE = 'team-token-alice-cached-beyond-01'
const KEY = 'sk-proj-alice-cached-beyond-1111aaaa'

/** A chat completion whose usage is `usage`. */
function answer(usage: Record<string, unknown>): string {
  const body = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString())
  body.usage = usage
  return JSON.stringify(body)
}

/** The same answer streamed, the usage in its last chunk. */
function streamed(usage: Record<string, unknown>): string {
  const chunk = (o: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'chatcmpl-s1', object: 'chat.completion.chunk', created: 1744990626, model: 'gpt-4o-mini-2024-07-18', ...o })}\n\n`
  return (
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }] }) +
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
    chunk({ choices: [], usage }) +
    'data: [DONE]\n\n'
  )
}

describe('an answer counting more cached tokens than prompt tokens', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('is priced with the whole prompt cached, never unpriced or negative, and its money reaches the team server', async () => {
    // 100 prompt tokens of which "150" cached; then 100 of which 80 read from and "50" written to the cache (OpenRouter's names).
    const over = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 150 } }
    const both = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 80, cache_write_tokens: 50 } }
    const replies = [
      { status: 200, headers: { 'content-type': 'application/json' }, body: answer(over) },
      { status: 200, headers: { 'content-type': 'text/event-stream' }, body: streamed(over) },
      { status: 200, headers: { 'content-type': 'application/json' }, body: answer(both) },
    ]
    const upstream: MockUpstream = await startMockUpstream(() => replies.shift()!)
    cleanups.push(() => upstream.close())
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const member: TestServer = await startTestServer({ timezone: 'UTC', team: { url: team.url, token: ALICE, max_backoff_ms: 500 } }, upstream.url)
    cleanups.push(() => member.cleanup())

    for (const stream of [false, true, false]) {
      const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }
      const r = await postJson(`${member.url}/v1/chat/completions`, body, { authorization: `Bearer ${KEY}` })
      expect(r.status).toBe(200)
    }
    const own = (await eventually(() => {
      const rows = ledgerRows(member.dbFile)
      return rows.length === 3 ? rows : undefined
    }))!

    const pricer = new Pricer()
    await pricer.ready()
    const at = new Date(own[0].ts)
    const whole = pricer.price('openai', 'openai', own[0].model, { ...emptyUsage(), input_tokens: 100, output_tokens: 20, cache_read_tokens: 100 }, at)
    const split = pricer.price('openai', 'openai', own[2].model, { ...emptyUsage(), input_tokens: 100, output_tokens: 20, cache_read_tokens: 80, cache_write_tokens: 20 }, at)
    expect(whole.priced && whole.cost_usd > 0 && split.priced && split.cost_usd > 0).toBe(true)
    const counts = (c: Record<string, number>) => [c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens, c.priced]
    expect(own.map(counts)).toEqual([
      [100, 100, 0, 20, 1],
      [100, 100, 0, 20, 1],
      [100, 80, 20, 20, 1],
    ])
    expect(own.map((c: { cost_usd: number }) => c.cost_usd)).toEqual([whole.cost_usd, whole.cost_usd, split.cost_usd])

    // The team server takes all three, none refused, and counts their money.
    const health = await eventually(async () => {
      const h = (await request(`${member.url}/api/health`)).json().team
      return h?.backlog === 0 && h.sent + h.rejected >= 3 ? h : undefined
    })
    expect(health).toMatchObject({ sent: 3, rejected: 0, last_error: null })
    const stored = ledgerRows(team.dbFile, "member = 'alice'")
    expect(stored.map((c: { origin_id: number; cost_usd: number }) => [c.origin_id, c.cost_usd])).toEqual(own.map((c: { id: number; cost_usd: number }) => [c.id, c.cost_usd]))
    expect((await request(`${team.url}/api/dashboard/summary`)).json().today_spend_usd).toBeCloseTo(2 * whole.cost_usd + split.cost_usd, 12)
  })

  it("so is a Gemini answer's cachedContentTokenCount above its promptTokenCount", async () => {
    const body = JSON.parse(fixture('gemini/generate-content-cached-thoughts.json').toString())
    body.usageMetadata = { promptTokenCount: 100, cachedContentTokenCount: 150, candidatesTokenCount: 20, totalTokenCount: 120 }
    const upstream: MockUpstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    cleanups.push(() => upstream.close())
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const member: TestServer = await startTestServer({ timezone: 'UTC', team: { url: team.url, token: ALICE, max_backoff_ms: 500 } }, upstream.url)
    cleanups.push(() => member.cleanup())
    const r = await postJson(`${member.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'AIza-alice-cached-beyond-0001' })
    expect(r.status).toBe(200)
    const own = (await eventually(() => ledgerRows(member.dbFile)[0]))!
    const pricer = new Pricer()
    await pricer.ready()
    const whole = pricer.price('google', 'gemini', own.model, { ...emptyUsage(), input_tokens: 100, output_tokens: 20, cache_read_tokens: 100 }, new Date(own.ts))
    expect(whole.priced && whole.cost_usd > 0).toBe(true)
    expect(own).toMatchObject({ input_tokens: 100, cache_read_tokens: 100, output_tokens: 20, priced: 1, cost_usd: whole.cost_usd })
    await eventually(async () => (await request(`${member.url}/api/health`)).json().team?.sent === 1 || undefined)
    expect(ledgerRows(team.dbFile, "member = 'alice'").map((c: { cost_usd: number }) => c.cost_usd)).toEqual([whole.cost_usd])
  })
})
