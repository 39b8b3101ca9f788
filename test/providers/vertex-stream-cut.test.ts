import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice } from './ledger'

/**
 * Vertex AI's Gemini streams put a `usageMetadata` in every event, but before the last one it
 * holds no count, only the tier: `{"trafficType": "ON_DEMAND"}` (a wire capture of gemini-2.5-flash
 * through aiplatform.googleapis.com, `k9-stream` of a public Vertex replay test: two such events,
 * then the last with `promptTokenCount` 28, `thoughtsTokenCount` 59, `finishReason: MAX_TOKENS`).
 * A stream cut before its last event (the agent stopped, the upstream reset) has reported no
 * tokens at all: it is estimated from its request and what it streamed, as one whose events carry
 * no `usageMetadata` is, never recorded at 0 tokens and $0.
 */

const s = serverOverMockUpstream()
const PATH = '/vertex/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse'
const PROMPT = 'Find all positive integer solutions of the Diophantine equation x^2 + y^2 + z^2 = 3xyz, and prove there are no others.'

/** The capture's first two events (its last, with the counts, never arrives). */
function events(trafficType: string | null): Buffer[] {
  const meta = { modelVersion: 'gemini-2.5-flash', createTime: '2026-10-09T02:36:52.821265Z', responseId: 'RFPIapGQMtKCidsPmcai6AM' }
  const usage = trafficType ? { usageMetadata: { trafficType } } : {}
  const thought =
    "**Exploring Solutions**\n\nI've begun by considering the properties of the Diophantine equation $x^2 + y^2 + z^2 = 3xyz$. My initial focus is on identifying any trivial or simple solutions, and then I plan to investigate the equation’s behavior more broadly.\n\n"
  return [
    { candidates: [{ content: { role: 'model', parts: [{ text: thought, thought: true }] } }], ...usage, ...meta },
    { candidates: [{ content: { role: 'model', parts: [{ text: 'We' }] } }], ...usage, ...meta },
  ].map((e) => Buffer.from(`data: ${JSON.stringify(e)}\r\n\r\n`))
}

async function cutCall(trafficType: string | null): Promise<any> {
  const before = ledgerRows(s.t.dbFile).length
  // (the mock resets right after its last write: a blank chunk after the second event lets that one leave first)
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [...events(trafficType), Buffer.from('\n')], delayMs: 30, resetAfterChunks: 3 }))
  await request(`${s.t.url}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ya29.a0-burnrate-vertex-cut-0001' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: PROMPT }] }] }),
  }).catch(() => undefined)
  return eventually(() => {
    const r = ledgerRows(s.t.dbFile)
    return r.length > before ? r[r.length - 1] : undefined
  })
}

describe('a Vertex AI Gemini stream cut before its last event', () => {
  it('whose events carry a count-less usageMetadata is estimated as one without it, not recorded at 0 tokens and $0', async () => {
    const reference = await cutCall(null)
    expect(reference).toMatchObject({ provider: 'vertex', model: 'gemini-2.5-flash', estimated: 1, priced: 1 })
    expect(reference.input_tokens).toBeGreaterThan(0)
    expect(reference.output_tokens).toBeGreaterThan(0)

    const row = await cutCall('ON_DEMAND')
    expect(row).toMatchObject({ provider: 'vertex', model: 'gemini-2.5-flash', estimated: 1, priced: 1 })
    expect([row.input_tokens, row.output_tokens]).toEqual([reference.input_tokens, reference.output_tokens])
    expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: row.input_tokens, output_tokens: row.output_tokens }, 'gemini-2.5-flash', row.ts))
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('served by Flex PayGo (trafficType ON_DEMAND_FLEX in those events): the estimate is billed at half, as the whole answer is', async () => {
    const standard = await cutCall('ON_DEMAND')
    const flex = await cutCall('ON_DEMAND_FLEX')
    expect([flex.input_tokens, flex.output_tokens, flex.estimated]).toEqual([standard.input_tokens, standard.output_tokens, 1])
    expect(flex.cost_usd).toBe(libraryPrice('google', { input_tokens: flex.input_tokens, output_tokens: flex.output_tokens }, 'gemini-2.5-flash', flex.ts) / 2)
  })
})
