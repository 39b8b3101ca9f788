import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Answers, MODEL, OUTPUT, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { TOKEN_TYPES, type TokenType, otlpSum, startCollector } from './support'

/**
 * A background response's call is recorded with estimated tokens (its answer was `queued`) and
 * takes its real usage later (pricing/background.ts): the token counters move with it, as the
 * cost counter does. A rise is added to the tokens counter, a fall to the token reductions counter
 * (counters never go down). Before, the token counters kept the estimate (7 input tokens, 0 output)
 * while the ledger had 40,000 / 120,000.
 */

const KEY = 'sk-test-background-obs-aaaaaaaa'
type Type = TokenType

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer
const answers: Answers = new Map()

beforeAll(async () => {
  upstream = await startMockUpstream(backgroundResponder(answers))
  collector = await startCollector()
  t = await startTestServer({ timezone: 'UTC', metrics: { enabled: true }, otel: { endpoint: collector.url, interval_ms: 200, traces: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
  await collector?.close()
})

/** Prometheus: `name`'s sample for MODEL and token `type` (0 when it has none). */
async function prom(name: string, type: Type): Promise<number> {
  const text = (await request(`${t.url}/metrics`)).text
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`model="${MODEL}"`) && l.includes(`type="${type}"`))
  return line ? Number(line.split(' ').at(-1)) : 0
}

/** Per token type, what the counters say: the tokens counter minus the reductions counter. */
async function promTokens(): Promise<Record<Type, number>> {
  const out = {} as Record<Type, number>
  for (const [type] of TOKEN_TYPES) out[type] = (await prom('burnrate_tokens_total', type)) - (await prom('burnrate_token_reductions_total', type))
  return out
}

function otlpTokens(): Record<Type, number> {
  const out = {} as Record<Type, number>
  for (const [type] of TOKEN_TYPES) {
    const attrs = { 'gen_ai.request.model': MODEL, 'burnrate.token.type': type }
    out[type] = (otlpSum(collector.metrics, 'burnrate.tokens', attrs) ?? 0) - (otlpSum(collector.metrics, 'burnrate.tokens.reductions', attrs) ?? 0)
  }
  return out
}

/** The ledger's sums of each token type for MODEL. */
function ledger(): Record<Type, number> {
  const out = {} as Record<Type, number>
  for (const [type, col] of TOKEN_TYPES) out[type] = (t.server.db.prepare(`SELECT coalesce(sum(${col}), 0) AS n FROM calls WHERE model = ?`).get(MODEL) as { n: number }).n
  return out
}

/** Creates background response `id` (queued: recorded with estimated tokens), then answers it with `usage` and polls it, so the call takes its real usage. */
async function settle(id: string, input: string, usage: Record<string, unknown>): Promise<void> {
  const r = await postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input, background: true, metadata: { id } }, { authorization: `Bearer ${KEY}` })
  expect(r.status).toBe(200)
  answers.set(id, backgroundBody(id, 'completed', usage, OUTPUT))
  expect((await request(`${t.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
  const settled = `SELECT count(*) AS n FROM calls WHERE response_id = ? AND endpoint = 'responses' AND estimated = 0`
  await eventually(() => (t.server.db.prepare(settled).get(id) as { n: number }).n === 1)
}

describe('the token counters follow a background response that takes its real usage', () => {
  it('adds rises to burnrate_tokens_total and falls to burnrate_token_reductions_total (Prometheus and OTLP)', async () => {
    // More tokens than estimated.
    await settle('resp_bg_obs_0001', 'x', USAGE)
    expect(ledger()).toMatchObject({ input: 40_000, output: 120_000, cache_read: 10_000, reasoning: 100_000 })
    await eventually(async () => (await prom('burnrate_tokens_total', 'output')) === 120_000)
    expect(await promTokens()).toEqual(ledger())
    expect(await prom('burnrate_token_reductions_total', 'input')).toBe(0)
    await eventually(() => JSON.stringify(otlpTokens()) === JSON.stringify(ledger()), 10_000)

    // Fewer input tokens than a long prompt was estimated at: the fall is counted apart.
    const before = ledger()
    await settle('resp_bg_obs_0002', 'otters and their habits '.repeat(200), { input_tokens: 2, output_tokens: 5, total_tokens: 7 })
    const after = ledger()
    expect(after.input).toBe(before.input + 2)
    await eventually(async () => (await prom('burnrate_tokens_total', 'output')) === after.output)
    expect(await prom('burnrate_token_reductions_total', 'input')).toBeGreaterThan(0)
    expect(await promTokens()).toEqual(after)
    await eventually(() => JSON.stringify(otlpTokens()) === JSON.stringify(after), 10_000)
    expect(otlpSum(collector.metrics, 'burnrate.tokens.reductions', { 'gen_ai.request.model': MODEL, 'burnrate.token.type': 'input' })).toBeGreaterThan(0)
  })
})
