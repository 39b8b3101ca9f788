import { afterEach, describe, expect, it, vi } from 'vitest'
import { fixture, fixtureFiles } from '../../../test/support/fixtures'
import { OutputText } from '../metering/output-text'
import { SseParser } from '../metering/sse'
import { inspectAnthropic } from './anthropic'
import { AnthropicMeter, mayBeMessageEvent } from './anthropic-meter'
import { anthropicUsage } from './anthropic-usage'
import type { MeterResult } from './types'

/** What the meter found when fed `events` ([name, data] pairs) in order. */
function meterOf(events: [string, string][]): MeterResult {
  const m = new AnthropicMeter()
  for (const [name, data] of events) m.event(name, data)
  return m.result()
}

function eventsOf(body: Buffer): [string, string][] {
  const out: [string, string][] = []
  const p = new SseParser((e, d) => out.push([e, d]))
  p.write(body)
  p.end()
  return out
}

/**
 * The meter as it would be if it parsed every event (the reference the shortcut must equal):
 * the same branches, written out on the parsed JSON only.
 */
function reference(events: [string, string][]): MeterResult {
  let raw: unknown = null
  let deltaUsage: unknown[] = []
  let model: string | undefined
  let id: string | undefined
  let complete = false
  for (const [, data] of events) {
    let ev: any
    try {
      ev = JSON.parse(data)
    } catch {
      continue
    }
    if (ev === null || typeof ev !== 'object') continue
    if (ev.type === 'message_stop') complete = true
    else if (ev.type === 'message_start' && ev.message && typeof ev.message === 'object') {
      if (typeof ev.message.model === 'string') model = ev.message.model
      if (typeof ev.message.id === 'string') id = ev.message.id
      if (ev.message.usage && typeof ev.message.usage === 'object') {
        raw = ev.message.usage
        deltaUsage = []
      }
    } else if (ev.type === 'message_delta' && ev.usage && typeof ev.usage === 'object') deltaUsage.push(ev.usage)
  }
  const m = new AnthropicMeter()
  // Replays only what the reference found as JSON bodies of its own, through the meter's own usage code.
  if (raw) m.event('message_start', JSON.stringify({ type: 'message_start', message: { usage: raw } }))
  for (const u of deltaUsage) m.event('message_delta', JSON.stringify({ type: 'message_delta', usage: u }))
  const r = m.result()
  return { ...r, model, responseId: id, complete }
}

describe('Anthropic stream metering parses only the events that can change the result', () => {
  afterEach(() => vi.restoreAllMocks())

  it('finds the same usage, model, id and completion as parsing every event, for every recorded stream', () => {
    const files = fixtureFiles('anthropic').filter((f) => f.endsWith('.sse'))
    expect(files.length).toBeGreaterThan(5)
    for (const f of files) {
      const events = eventsOf(fixture(f))
      const got = meterOf(events)
      const want = reference(events)
      expect(got.usage, f).toEqual(want.usage)
      expect(got.usage, f).not.toBeNull()
      expect({ model: got.model, id: got.responseId, complete: got.complete }, f).toEqual({
        model: want.model,
        id: want.responseId,
        complete: want.complete,
      })
    }
  })

  it('parses nothing but the message events once message_start gave the usage', () => {
    const events = eventsOf(fixture('anthropic/messages-stream-tool-use.sse'))
    expect(events.length).toBeGreaterThan(30)
    const parse = vi.spyOn(JSON, 'parse')
    const r = meterOf(events)
    // message_start, message_delta and message_stop: not the 30-odd block starts, stops, pings and deltas.
    expect(parse).toHaveBeenCalledTimes(3)
    expect(r.usage?.input_tokens).toBe(506)
    expect(r.usage?.output_tokens).toBe(153)
    expect(r.complete).toBe(true)
  })

  const start = `{"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":10,"output_tokens":1}}}`

  it('reads a message_delta behind a duplicate "type" key, as JSON.parse does (the last one counts)', () => {
    const r = meterOf([
      ['message_start', start],
      // Named and starting like a text delta; JSON.parse makes it a message_delta.
      ['content_block_delta', `{"type":"content_block_delta","index":0,"type":"message_delta","usage":{"output_tokens":99}}`],
    ])
    expect(r.usage?.output_tokens).toBe(99)
  })

  it('reads a type spelled with \\u escapes', () => {
    const r = meterOf([
      ['message_start', start],
      ['x', `{"type":"\\u006dessage_delta","usage":{"output_tokens":42}}`],
      ['y', `{"type":"\\u006d\\u0065\\u0073\\u0073\\u0061\\u0067\\u0065\\u005f\\u0073\\u0074\\u006f\\u0070"}`],
    ])
    expect(r.usage?.output_tokens).toBe(42)
    expect(r.complete).toBe(true)
  })

  it('leaves the result alone for a text delta that only mentions message_delta in its text', () => {
    const r = meterOf([
      ['message_start', start],
      ['content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \\"message_delta\\" event, usage 7"}}`],
      ['message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`],
    ])
    expect(r.usage?.output_tokens).toBe(5)
    expect(r.usage?.input_tokens).toBe(10)
  })

  it('keeps the text of a stream whose usage is not known yet, for its estimate', () => {
    const r = meterOf([
      ['content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`],
      ['content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there\\n"}}`],
    ])
    expect(r.usage).toBeNull()
    expect(r.outputText).toBe('Hello there\n')
    expect(r.outputScale).toBeUndefined()
  })

  it('a stream without usage longer than the text kept for its estimate says by how much to scale it', () => {
    const old = OutputText.MAX_CHARS
    OutputText.MAX_CHARS = 1000
    try {
      const delta = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y'.repeat(700) } })
      const r = meterOf(Array.from({ length: 10 }, () => ['content_block_delta', delta] as [string, string]))
      expect(r.usage).toBeNull()
      expect(r.outputText).toBe('y'.repeat(1000))
      expect(r.outputScale).toBe(7000 / 1000)
    } finally {
      OutputText.MAX_CHARS = old
    }
  })

  it('a stream cut before its last message_delta: prompt counts exact, the streamed text kept for the output estimate', () => {
    const events = eventsOf(fixture('anthropic/messages-stream-cache-write.sse'))
    const cut = events.findIndex(([, d]) => d.includes('"message_delta"'))
    expect(cut).toBeGreaterThan(10)
    const parse = vi.spyOn(JSON, 'parse')
    const m = new AnthropicMeter()
    for (const [name, data] of events.slice(0, cut)) m.event(name, data)
    // Only message_start is parsed while the stream flows; the kept events only once it is known to be cut.
    expect(parse).toHaveBeenCalledTimes(1)
    const r = m.result()
    expect(r.partialOutput).toBe(true)
    expect(r.usage).toMatchObject({ input_tokens: 4 + 1165, cache_write_tokens: 1165, output_tokens: 1 })
    const text = events
      .slice(0, cut)
      .map(([, d]) => JSON.parse(d))
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta.text)
      .join('')
    expect(text.length).toBeGreaterThan(100)
    expect(r.outputText).toBe(text)
    expect(r.outputScale).toBeUndefined()
  })

  it('a cut stream keeps at most a million characters of events and says by how much to scale the estimate', () => {
    const piece = 'x'.repeat(10_000)
    const delta = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } })
    const m = new AnthropicMeter()
    m.event('message_start', start)
    for (let i = 0; i < 300; i++) m.event('content_block_delta', delta)
    const r = m.result()
    expect(r.partialOutput).toBe(true)
    const kept = Math.floor(1_000_000 / delta.length)
    expect(r.outputText).toBe(piece.repeat(kept))
    expect(r.outputScale).toBeCloseTo(300 / kept, 12)
  })

  it('a cut stream whose kept events hold more text than is kept for the estimate scales by both shares', () => {
    const old = OutputText.MAX_CHARS
    OutputText.MAX_CHARS = 1000
    try {
      const piece = 'x'.repeat(10_000)
      const delta = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } })
      const m = new AnthropicMeter()
      m.event('message_start', start)
      for (let i = 0; i < 300; i++) m.event('content_block_delta', delta)
      const r = m.result()
      expect(r.outputText).toBe('x'.repeat(1000))
      // 300 pieces of 10,000 characters streamed; 1,000 characters kept.
      expect(r.outputScale).toBeCloseTo((300 * 10_000) / 1000, 9)
    } finally {
      OutputText.MAX_CHARS = old
    }
  })

  it('a whole stream is final: no estimate', () => {
    const r = meterOf(eventsOf(fixture('anthropic/messages-stream-cache-write.sse')))
    expect(r.partialOutput).toBeUndefined()
    expect(r.outputText).toBeUndefined()
    expect(r.usage?.output_tokens).toBe(201)
  })

  it('says an event may be a message event whenever its text could spell one', () => {
    expect(mayBeMessageEvent('{"type":"message_stop"}')).toBe(true)
    expect(mayBeMessageEvent('{"type":"ping"}')).toBe(false)
    expect(mayBeMessageEvent('{"type":"content_block_stop","index":1}')).toBe(false)
    expect(mayBeMessageEvent('{"type":"content_block_delta","delta":{"text":"a\\nb"}}')).toBe(false)
    expect(mayBeMessageEvent('{"type":"\\u006dessage_stop"}')).toBe(true)
    expect(mayBeMessageEvent('{"type":"content_block_delta","delta":{"text":"\\\\u0041"}}')).toBe(true)
  })
})

describe('Anthropic fast mode (speed)', () => {
  it('an answer fast mode served is marked for its fast price, in JSON and in a stream; standard speed is not', () => {
    const m = new AnthropicMeter()
    m.json({ type: 'message', model: 'claude-opus-5-5', usage: { input_tokens: 25, output_tokens: 150, speed: 'fast' } })
    expect(m.result().usage).toMatchObject({ input_tokens: 25, output_tokens: 150, fast: true })
    const std = new AnthropicMeter()
    std.json({ type: 'message', usage: { input_tokens: 25, output_tokens: 150, speed: 'standard' } })
    expect(std.result().usage?.fast).toBeUndefined()
    const r = meterOf([
      ['message_start', JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10, output_tokens: 1, speed: 'fast' } } })],
      ['message_delta', JSON.stringify({ type: 'message_delta', usage: { output_tokens: 40 } })],
    ])
    expect(r.usage).toMatchObject({ output_tokens: 40, fast: true })
  })
})

describe('Anthropic fast mode asked for', () => {
  it('a request with speed: fast is marked for budgets (what it is recorded at, its answer says)', () => {
    const req = (body: unknown) => ({ method: 'POST', path: '/v1/messages', query: '', headers: {}, body })
    expect(inspectAnthropic(req({ model: 'claude-opus-5-5', speed: 'fast', messages: [] })).fast).toBe(true)
    expect(inspectAnthropic(req({ model: 'claude-opus-5-5', speed: 'standard', messages: [] })).fast).toBeUndefined()
  })
})

describe('Anthropic data residency (inference_geo)', () => {
  const usage = (geo?: string) => ({ input_tokens: 25, output_tokens: 150, ...(geo === undefined ? {} : { inference_geo: geo }) })

  it('an answer that ran in the US only is billed with the premium; global, or no word of it, is not', () => {
    for (const [geo, premium] of [['us', true], ['global', false], [undefined, false], ['not_available', false]] as const) {
      const m = new AnthropicMeter()
      m.json({ type: 'message', model: 'claude-opus-4-6', usage: usage(geo) })
      expect(m.result().usage?.data_residency, String(geo)).toBe(premium ? true : undefined)
      expect(anthropicUsage(usage(geo))?.data_residency, String(geo)).toBe(premium ? true : undefined)
    }
  })

  it('a stream says so in message_start; a message_delta that does not repeat it leaves it', () => {
    const r = meterOf([
      ['message_start', JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 'claude-opus-4-6', usage: { input_tokens: 10, output_tokens: 1, inference_geo: 'us' } } })],
      ['message_delta', JSON.stringify({ type: 'message_delta', usage: { output_tokens: 40 } })],
    ])
    expect(r.usage).toMatchObject({ input_tokens: 10, output_tokens: 40, data_residency: true })
  })

  it('with compaction, the iterations are summed and keep the premium', () => {
    const m = new AnthropicMeter()
    m.json({ type: 'message', usage: { input_tokens: 5, output_tokens: 5, inference_geo: 'us', iterations: [{ input_tokens: 100, output_tokens: 20 }, { input_tokens: 5, output_tokens: 5 }] } })
    expect(m.result().usage).toMatchObject({ input_tokens: 105, output_tokens: 25, data_residency: true })
  })

  it('a request that asks for US-only inference is billed with the premium (before its answer says so, and for budgets)', () => {
    const req = (body: unknown) => ({ method: 'POST', path: '/v1/messages', query: '', headers: {}, body })
    expect(inspectAnthropic(req({ model: 'claude-opus-4-6', inference_geo: 'us', messages: [] })).dataResidency).toBe(true)
    expect(inspectAnthropic(req({ model: 'claude-opus-4-6', inference_geo: 'global', messages: [] })).dataResidency).toBeUndefined()
    expect(inspectAnthropic(req({ model: 'claude-opus-4-6', messages: [] })).dataResidency).toBeUndefined()
  })
})
