import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded, rows } from './ledger'

/**
 * The Interactions API on Vertex AI: Google's Gen AI SDK (`client.interactions.create` with
 * `vertexai: true`) sends it below the project and location (googleapis/js-genai
 * `src/gaos/google-genai.ts`, `getGoogleGenAIAPIVersion`):
 * `POST /v1beta1/projects/{project}/locations/{location}/interactions`, polled with
 * `GET …/interactions/{id}`. Its requests and answers are the Gemini API's (`/v1beta/interactions`,
 * test/providers/gemini-interactions.test.ts), so it is metered by the same meter.
 */

const s = serverOverMockUpstream()

beforeEach(() => {
  s.upstream.requests.length = 0
})

const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-interactions-0001' }
const BASE = '/v1beta1/projects/my-proj/locations/global/interactions'
const MODEL = 'gemini-2.5-flash'
const USAGE = { total_input_tokens: 120, total_cached_tokens: 0, total_output_tokens: 30, total_thought_tokens: 12, total_tool_use_tokens: 0, total_tokens: 162 }

function interaction(id: string, status: string, usage?: unknown): Record<string, unknown> {
  return { id, object: 'interaction', model: MODEL, status, role: 'model', steps: [], ...(usage ? { usage } : {}) }
}

/** The usage above at the model's list: its thoughts at the output rate. */
const cost = (ts: number) => calcPrice({ input_tokens: 120, output_tokens: 42 }, MODEL, { providerId: 'google', timestamp: new Date(ts) })!.total_price

describe('the Interactions API on Vertex AI', () => {
  it('a created interaction is metered and priced as the Gemini API one is', async () => {
    answer(s.upstream, interaction('v1_abc', 'completed', USAGE))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${BASE}`, { model: MODEL, input: 'Count to 5' }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(BASE)
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'interactions', model: MODEL, input_tokens: 120, output_tokens: 42, reasoning_tokens: 12, priced: 1, estimated: 0, response_id: 'v1_abc' })
    expect(row.cost_usd).toBe(cost(row.ts))
  })

  it('a streamed one, by its interaction.completed event', async () => {
    const ev = (d: Record<string, unknown>) => `event: ${d.event_type}\ndata: ${JSON.stringify(d)}\n\n`
    answer(
      s.upstream,
      ev({ event_type: 'interaction.created', interaction: { id: 'v1_s', status: 'in_progress', model: MODEL } }) +
        ev({ event_type: 'step.delta', index: 0, delta: { type: 'text', text: '1, 2, 3' } }) +
        ev({ event_type: 'interaction.completed', interaction: { id: 'v1_s', status: 'completed', model: MODEL, usage: USAGE } }),
      'sse',
    )
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${BASE}?alt=sse`, { model: MODEL, input: 'Count to 5', stream: true }, HEADERS))
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'interactions', model: MODEL, streamed: 1, input_tokens: 120, output_tokens: 42, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(cost(row.ts))
  })

  it('a background one takes its usage from the read that finds it ended; the read is free', async () => {
    answer(s.upstream, interaction('v1_bg', 'in_progress'))
    const created = await recorded(s.t, () => postJson(`${s.t.url}/vertex${BASE}`, { model: MODEL, input: 'Research', background: true }, HEADERS))
    expect(created).toMatchObject({ provider: 'vertex', endpoint: 'interactions', model: MODEL, estimated: 1 })
    answer(s.upstream, interaction('v1_bg', 'completed', USAGE))
    const read = await recorded(s.t, () => request(`${s.t.url}/vertex${BASE}/v1_bg`, { method: 'GET', headers: HEADERS }))
    expect(s.upstream.requests.at(-1)!.url).toBe(`${BASE}/v1_bg`)
    expect(read).toMatchObject({ provider: 'vertex', endpoint: 'interactions.get', cost_usd: 0 })
    const settled = await eventually(() => {
      const r = rows(s.t).find((x) => x.id === created.id)
      return r && r.estimated === 0 ? r : undefined
    })
    expect(settled).toMatchObject({ input_tokens: 120, output_tokens: 42, priced: 1 })
    expect(settled.cost_usd).toBe(cost(settled.ts))
  })
})
