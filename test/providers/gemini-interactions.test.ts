import http from 'node:http'
import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { startMockUpstream, type MockUpstream } from '../support/mock-upstream'
import { startTestServer, type TestServer } from '../support/server'
import { rows } from './ledger'

/**
 * The Gemini API's Interactions API (ai.google.dev/gemini-api/docs/interactions; googleapis/
 * python-genai `google/genai/_gaos/interactions.py` and `_gaos/types/interactions/`), in its
 * documented shapes: `POST /v1beta/interactions` answers an Interaction (`{id, status, model,
 * usage: {total_input_tokens…}}`), or with `stream: true` events whose data carry their
 * `event_type` (`interaction.created` … `interaction.completed`, whose interaction holds the
 * usage); `background: true` answers `in_progress` and is polled with `GET /v1beta/interactions/{id}`.
 */

const KEY = 'AIzaSy-test-interactions-000000001'
const BLOCKED = 'AIzaSy-block-interactions-00000001'
const H = { 'x-goog-api-key': KEY }
const MODEL = 'gemini-2.5-flash'

/** The usage of a thinking model's interaction: 12 thought tokens beside 30 of output (total 162). */
const USAGE = {
  total_input_tokens: 120,
  total_cached_tokens: 0,
  total_output_tokens: 30,
  total_thought_tokens: 12,
  total_tool_use_tokens: 0,
  total_tokens: 162,
  input_tokens_by_modality: [{ modality: 'text', tokens: 120 }],
  output_tokens_by_modality: [{ modality: 'text', tokens: 30 }],
}

function interaction(id: string, status: string, usage: unknown = USAGE): Record<string, unknown> {
  return {
    id,
    object: 'interaction',
    model: MODEL,
    status,
    created: '2026-12-07T03:00:00Z',
    updated: '2026-12-07T03:00:02Z',
    role: 'model',
    service_tier: 'standard',
    steps: status === 'completed' ? [{ type: 'thought', signature: 'c2ln' }, { type: 'model_output', content: [{ type: 'text', text: '1, 2, 3, 4, 5' }] }] : [],
    ...(usage ? { usage } : {}),
  }
}

/** A stream as the streaming guide shows it: `event:` lines naming each event, its data carrying `event_type` too. */
function stream(id: string, names: { created: string; completed: string } = { created: 'interaction.created', completed: 'interaction.completed' }, complete = true): string {
  const ev = (data: Record<string, unknown>) => `event: ${data.event_type}\ndata: ${JSON.stringify(data)}\n\n`
  let s =
    ev({ event_type: names.created, interaction: { id, status: 'in_progress', object: 'interaction', model: MODEL } }) +
    ev({ event_type: 'interaction.status_update', interaction_id: id, status: 'in_progress' }) +
    ev({ event_type: 'step.start', index: 0, step: { type: 'thought', signature: '' } }) +
    ev({ event_type: 'step.stop', index: 0 }) +
    ev({ event_type: 'step.start', index: 1, step: { type: 'model_output', content: [] } }) +
    ev({ event_type: 'step.delta', index: 1, delta: { type: 'text', text: '1, 2, 3, ' } }) +
    ev({ event_type: 'step.delta', index: 1, delta: { type: 'text', text: '4, 5' } }) +
    ev({ event_type: 'step.stop', index: 1 })
  if (complete) s += ev({ event_type: names.completed, interaction: { id, status: 'completed', object: 'interaction', model: MODEL, usage: USAGE } })
  return s
}

/** What the usage above costs: the thoughts at the output rate, as Google bills them. */
const cost = (ts: number) => calcPrice({ input_tokens: 120, output_tokens: 42 }, MODEL, { providerId: 'google', timestamp: new Date(ts) })!.total_price

describe('the Gemini Interactions API is metered as generateContent is', () => {
  let upstream: MockUpstream
  let t: TestServer
  /** What the mock answers, per path (a function of the request count for polls). */
  const answers = new Map<string, () => { sse?: string; json?: unknown; cut?: boolean; hold?: Promise<void> }>()

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => {
      const a = answers.get(`${req.method} ${req.url}`)?.()
      if (!a) return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":404}}' }
      if (a.sse !== undefined) {
        const text = Buffer.from(a.sse)
        const half = Math.floor(text.length / 2)
        return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [text.subarray(0, half), text.subarray(half)], delayMs: 1, ...(a.cut ? { resetAfterChunks: 2 } : {}), ...(a.hold ? { holdAfterChunks: 1, release: a.hold } : {}) }
      }
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(a.json) }
    })
    t = await startTestServer(
      { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'AIzaSy-block-*', daily_limit_usd: 0.001, action: 'block' }] } },
      upstream.url,
    )
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const create = (body: Record<string, unknown>, headers: Record<string, string> = H) =>
    postJson(`${t.url}/gemini/v1beta/interactions`, { model: MODEL, input: 'Count from 1 to 5.', ...body }, headers)
  const callOf = (id: string) => rows(t).find((r) => r.response_id === id && r.endpoint === 'interactions')

  it('an interaction answered as JSON: its model, tokens (thoughts at the output rate) and exact cost', async () => {
    const id = 'v1_json_0001'
    answers.set('POST /v1beta/interactions', () => ({ json: interaction(id, 'completed') }))
    const r = await create({})
    expect(r.status).toBe(200)
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ provider: 'gemini', endpoint: 'interactions', model: MODEL, input_tokens: 120, output_tokens: 42, reasoning_tokens: 12, estimated: 0, priced: 1 })
    expect(call.cost_usd).toBe(cost(call.ts))
    expect(call.cost_usd).toBeGreaterThan(0)
  })

  it('the Google Search queries its usage counts (grounding_tool_count) are recorded with it', async () => {
    const id = 'v1_search_0008'
    answers.set('POST /v1beta/interactions', () => ({ json: interaction(id, 'completed', { ...USAGE, grounding_tool_count: [{ type: 'google_search', count: 2 }] }) }))
    await create({ tools: [{ type: 'google_search' }] })
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ input_tokens: 120, output_tokens: 42, priced: 1 })
    expect(JSON.parse(call.usage_extra)).toEqual({ google_search_queries: 2, google_search_grounded: true })
  })

  it('a streamed interaction: the usage of its interaction.completed event, the stream passed on as it came', async () => {
    const id = 'v1_stream_0002'
    const body = stream(id)
    answers.set('POST /v1beta/interactions', () => ({ sse: body }))
    const r = await create({ stream: true })
    expect(r.text).toBe(body)
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ model: MODEL, streamed: 1, input_tokens: 120, output_tokens: 42, reasoning_tokens: 12, estimated: 0, priced: 1 })
    expect(call.cost_usd).toBe(cost(call.ts))
  })

  it('a stream reaches the client as it comes, not held until its end', async () => {
    const id = 'v1_live_0007'
    const body = stream(id)
    let release = () => {}
    const hold = new Promise<void>((r) => (release = r))
    answers.set('POST /v1beta/interactions', () => ({ sse: body, hold }))
    const got: Buffer[] = []
    const ended = new Promise<void>((resolve, reject) => {
      const req = http.request(`${t.url}/gemini/v1beta/interactions`, { method: 'POST', headers: { 'content-type': 'application/json', ...H }, agent: false }, (res) => {
        res.on('data', (c: Buffer) => got.push(c))
        res.on('end', resolve)
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(JSON.stringify({ model: MODEL, input: 'Count from 1 to 5.', stream: true }))
    })
    try {
      // Upstream has sent its first half only: the client already has it.
      await eventually(() => Buffer.concat(got).toString().includes('interaction.created'))
      expect(Buffer.concat(got).toString()).not.toContain('interaction.completed')
    } finally {
      release()
    }
    await ended
    expect(Buffer.concat(got).toString()).toBe(body)
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ input_tokens: 120, output_tokens: 42, estimated: 0 })
  })

  it('a stream with the events named before May 2026 (interaction.start, interaction.complete) is metered the same', async () => {
    const id = 'v1_legacy_0003'
    answers.set('POST /v1beta/interactions', () => ({ sse: stream(id, { created: 'interaction.start', completed: 'interaction.complete' }) }))
    await create({ stream: true })
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ input_tokens: 120, output_tokens: 42, estimated: 0, priced: 1 })
    expect(call.cost_usd).toBe(cost(call.ts))
  })

  it('a stream cut before interaction.completed is estimated, never recorded at $0', async () => {
    const id = 'v1_cut_0004'
    answers.set('POST /v1beta/interactions', () => ({ sse: stream(id, undefined, false), cut: true }))
    await create({ stream: true }).catch(() => undefined)
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ model: MODEL, estimated: 1 })
    expect(call.input_tokens).toBeGreaterThan(0)
    expect(call.output_tokens).toBeGreaterThan(0)
    expect(call.cost_usd).toBeGreaterThan(0)
  })

  it('a background interaction takes the usage of the poll that finds it done, once; the polls cost nothing', async () => {
    const id = 'v1_bg_0005'
    answers.set('POST /v1beta/interactions', () => ({ json: interaction(id, 'in_progress', null) }))
    let done = false
    answers.set(`GET /v1beta/interactions/${id}`, () => ({ json: done ? interaction(id, 'completed') : interaction(id, 'in_progress', null) }))
    expect((await create({ background: true, agent: undefined })).status).toBe(200)
    const queued = await eventually(() => callOf(id))
    expect(queued).toMatchObject({ estimated: 1, model: MODEL })
    const poll = () => request(`${t.url}/gemini/v1beta/interactions/${id}`, { headers: H })
    expect((await poll()).status).toBe(200)
    done = true
    expect((await poll()).json()).toMatchObject({ status: 'completed' })
    const call = await eventually(() => {
      const c = callOf(id)
      return c && c.estimated === 0 ? c : undefined
    })
    expect(call).toMatchObject({ input_tokens: 120, output_tokens: 42, reasoning_tokens: 12, priced: 1 })
    expect(call.cost_usd).toBe(cost(call.ts))
    // Read again: nothing moves a second time, and the reads are free.
    expect((await poll()).status).toBe(200)
    const reads = await eventually(() => {
      const p = rows(t).filter((c) => c.response_id === id && c.endpoint === 'interactions.get')
      return p.length === 3 ? p : undefined
    })
    for (const p of reads!) expect(p).toMatchObject({ cost_usd: 0, input_tokens: 0, output_tokens: 0 })
    await t.server.proxy.drain(2000)
    expect(callOf(id).cost_usd).toBe(cost(call.ts))
    expect(rows(t).filter((c) => c.response_id === id && c.cost_usd > 0)).toHaveLength(1)
  })

  it('a block rule counts interactions: once their cost is over its limit the next is refused, never a read', async () => {
    const id = 'v1_block_0006'
    answers.set('POST /v1beta/interactions', () => ({ json: interaction(id, 'completed', { ...USAGE, total_output_tokens: 3_000 }) }))
    answers.set(`GET /v1beta/interactions/${id}`, () => ({ json: interaction(id, 'completed') }))
    const headers = { 'x-goog-api-key': BLOCKED }
    expect((await create({}, headers)).status).toBe(200)
    const call = await eventually(() => callOf(id))
    expect(call.cost_usd).toBeGreaterThan(0.001)
    // The rule's meter counts it, at its cost.
    const spent = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.api_key_hash === call.api_key_hash)?.windows[0]?.spent_usd as number | undefined
    }
    await eventually(async () => (await spent()) === call.cost_usd)
    const refused = await create({}, headers)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
    expect(refused.json().error.spent_usd).toBe(call.cost_usd)
    expect((await request(`${t.url}/gemini/v1beta/interactions/${id}`, { headers })).status).toBe(200)
  })
})
