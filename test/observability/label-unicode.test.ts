import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OtelPipeline } from '../../src/main/otel/pipeline'
import { makeCall } from '../dashboard/seed'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector } from './support'

/**
 * Label values come from what clients send (a model's name, the agent and tenant headers), cut at
 * 100 characters. Cut in the middle of a character outside the BMP (an emoji: two UTF-16 units), or
 * sent with half of one (JSON's `"\ud83d"`), a value is not valid Unicode, and is written out as
 * U+FFFD (the scrape is UTF-8): two values Burnrate kept apart became one series name, twice in the
 * same scrape. Prometheus keeps the first of two samples of a series in a scrape and drops the other
 * (the calls, tokens and cost of the second went missing from every sum); an OpenTelemetry collector
 * decodes both attribute sets to one, whose cumulative points then come from two streams.
 */

/** A provider whose answer names the model the request asked for. */
function echoingUpstream(): Promise<MockUpstream> {
  return startMockUpstream((req) => {
    const model = JSON.parse(req.body.toString()).model
    const answer = { id: 'chatcmpl-1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }
  })
}

const long = 'y'.repeat(99)
// Cut at 100 characters, the first two are the 99 letters and half an emoji; the third is that as
// written out; the fourth is half of one on its own, and the fifth U+FFFD itself.
/** A header value as its UTF-8 bytes (Node sends a header's string as latin1; Burnrate reads valid UTF-8 as such). */
const utf8 = (v: string) => Buffer.from(v, 'utf8').toString('latin1')

const MODELS = [`${long}😀a`, `${long}😁b`, `${long}\ufffd`, 'half-\ud83d', 'half-\ufffd']

/** The series of a text exposition (name and labels as written), each with how many samples it has. */
function seriesCounts(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const series = line.slice(0, line.lastIndexOf(' '))
    out.set(series, (out.get(series) ?? 0) + 1)
  }
  return out
}

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await echoingUpstream()
  t = await startTestServer({ timezone: 'UTC', metrics: { enabled: true } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

describe('label values that are not valid Unicode once cut', () => {
  it('make one series each in a scrape, never two samples of the same series', async () => {
    for (const model of MODELS) {
      const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [] }, { authorization: 'Bearer sk-unicode-0001', 'x-burnrate-agent': utf8(`${long}😀`) })
      expect(r.status).toBe(200)
    }
    await postJson(`${t.url}/v1/chat/completions`, { model: 'plain', messages: [] }, { authorization: 'Bearer sk-unicode-0001', 'x-burnrate-agent': utf8(`${long}\ufffd`) })
    t.server.ledger.flush()
    expect(ledgerRows(t.dbFile)).toHaveLength(MODELS.length + 1)
    // As Prometheus reads the scrape: its bytes, as UTF-8.
    const r = await request(`${t.url}/metrics`)
    const text = r.body.toString('utf8')
    const twice = [...seriesCounts(text)].filter(([, n]) => n > 1).map(([s]) => s)
    expect(twice).toEqual([])
    // Every call in the calls counter, once: the sum Prometheus gets.
    const total = text
      .split('\n')
      .filter((l) => l.startsWith('burnrate_calls_total{'))
      .reduce((s, l) => s + Number(l.split(' ').at(-1)), 0)
    expect(total).toBe(MODELS.length + 1)
  })
})

describe('OTLP attributes that are not valid Unicode once cut', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('make one attribute set each, as a collector decodes them', async () => {
    const c = await startCollector()
    cleanups.push(() => c.close())
    const p = new OtelPipeline({ endpoint: c.url, headers: {}, intervalMs: 200, timeoutMs: 5000, maxQueue: 100, traces: false, metrics: true, version: 'test' })
    cleanups.push(() => p.close())
    for (const model of MODELS) p.observe(makeCall({ model, agent: 'a', cost_usd: 0.01 }))
    p.tick()
    const points = await eventually(() => {
      const body = c.metrics.at(-1)
      const cost = body?.resourceMetrics.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics)).find((x: any) => x.name === 'gen_ai.usage.cost')
      return cost?.sum?.dataPoints?.length ? cost.sum.dataPoints : null
    }, 20_000)
    // A collector (Go, protobuf or JSON) reads a lone UTF-16 half as U+FFFD.
    const decoded = (points as any[]).map((pt) =>
      JSON.stringify(
        pt.attributes
          .map((a: any) => [a.key, String(a.value.stringValue ?? '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')])
          .sort(),
      ),
    )
    expect(new Set(decoded).size).toBe(decoded.length)
  })
})
