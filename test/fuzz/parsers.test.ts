import zlib from 'node:zlib'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BodyTap, JsonCollector, objectAfterKey } from '../../src/main/metering/body-tap'
import { SseParser } from '../../src/main/metering/sse'
import { PROVIDERS } from '../../src/main/providers/registry'
import type { RequestInfo } from '../../src/main/providers/types'
import { eventMessage, readEventStream as messages } from '../support/event-stream'

/**
 * The stream parsers and meters on random and malformed input: thousands of cases, no throw,
 * and usage that is always finite and non-negative (a malformed provider response must never
 * turn into NaN, negative or infinite money).
 */

const RUNS = { numRuns: 2000, seed: 20261121 }

/** Text that looks like an event stream: fields, comments, all three line endings, unicode. */
const sseText = fc
  .array(
    fc.oneof(
      fc.tuple(fc.constantFrom('data', 'event', 'id', 'retry', ':', 'dat', 'data '), fc.constantFrom(':', ': ', '', '::'), fc.string({ unit: 'grapheme', maxLength: 30 })).map(([f, c, v]) => f + c + v),
      fc.constant(''),
      fc.string({ maxLength: 20 }),
    ),
    { maxLength: 30 },
  )
  .chain((lines) => fc.array(fc.constantFrom('\n', '\r\n', '\r'), { minLength: lines.length, maxLength: lines.length }).map((ends) => lines.map((l, i) => l + ends[i]).join('')))

/** Cuts a buffer at random places. */
function splitAt(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let prev = 0
  for (const p of points) {
    out.push(buf.subarray(prev, p))
    prev = p
  }
  out.push(buf.subarray(prev))
  return out
}

function events(chunks: Buffer[]): [string, string][] {
  const out: [string, string][] = []
  const p = new SseParser((e, d) => out.push([e, d]))
  for (const c of chunks) p.write(c)
  p.end()
  return out
}

describe('SseParser', () => {
  it('never throws on random bytes, however they are cut', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
        events(splitAt(Buffer.from(bytes), cuts))
      }),
      RUNS,
    )
  })

  it('gives the same events however an event stream is cut (inside CRLF, inside UTF-8 characters)', () => {
    fc.assert(
      fc.property(sseText, fc.array(fc.nat(), { maxLength: 12 }), (text, cuts) => {
        const whole = Buffer.from(text, 'utf8')
        expect(events(splitAt(whole, cuts))).toEqual(events([whole]))
      }),
      RUNS,
    )
  })
})

describe('EventStreamReader', () => {
  it('never throws on random bytes, however they are cut', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
        messages(splitAt(Buffer.from(bytes), cuts))
      }),
      RUNS,
    )
  })

  it('gives the same messages however an event stream is cut, and garbage after them loses none', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.jsonValue()), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.uint8Array({ maxLength: 40 }),
        (msgs, cuts, tail) => {
          const whole = Buffer.concat(msgs.map(([t, p]) => eventMessage(t, p)))
          const want = msgs.map(([t, p]) => [t, JSON.stringify(p)])
          expect(messages(splitAt(whole, cuts))).toEqual(want)
          expect(messages([whole, Buffer.from(tail)]).slice(0, want.length)).toEqual(want)
        },
      ),
      { ...RUNS, numRuns: 500 },
    )
  })
})

/** Event payloads: random JSON, and objects shaped like the providers' events with hostile values. */
const hostileNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(-1, 1e308, -0, Number.MAX_SAFE_INTEGER), fc.string({ maxLength: 5 }), fc.constant(null), fc.jsonValue())
const usageLike = fc.dictionary(
  fc.constantFrom(
    'prompt_tokens', 'completion_tokens', 'total_tokens', 'input_tokens', 'output_tokens', 'cache_read_input_tokens',
    'cache_creation_input_tokens', 'promptTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount', 'cachedContentTokenCount',
    'toolUsePromptTokenCount', 'prompt_tokens_details', 'completion_tokens_details', 'input_tokens_details', 'output_tokens_details',
    'cache_creation', 'server_tool_use', 'iterations', 'cost', 'is_byok',
    // Bedrock's Converse and invocation metrics.
    'inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheWriteInputTokens', 'cacheDetails', 'inputTokenCount', 'outputTokenCount',
  ),
  fc.oneof(hostileNumber, fc.dictionary(fc.string({ maxLength: 20 }), hostileNumber, { maxKeys: 4 }), fc.array(fc.dictionary(fc.string({ maxLength: 12 }), hostileNumber, { maxKeys: 4 }), { maxLength: 3 })),
  { maxKeys: 8 },
)
const eventLike = fc.oneof(
  fc.jsonValue(),
  fc.record({ type: fc.constantFrom('message_start', 'message_delta', 'content_block_delta', 'response.completed', 'response.output_text.delta', 'response.failed', 'x'), message: fc.record({ model: fc.jsonValue(), usage: usageLike }, { requiredKeys: [] }), usage: usageLike, response: fc.record({ model: fc.jsonValue(), usage: usageLike }, { requiredKeys: [] }), delta: fc.jsonValue() }, { requiredKeys: [] }),
  fc.record({ model: fc.jsonValue(), usage: usageLike, usageMetadata: usageLike, modelVersion: fc.jsonValue(), choices: fc.jsonValue(), candidates: fc.jsonValue() }, { requiredKeys: [] }),
  fc.record({ type: fc.constantFrom('message_stop', 'x'), 'amazon-bedrock-invocationMetrics': usageLike }, { requiredKeys: [] }),
)
const data = fc.oneof(
  { weight: 4, arbitrary: eventLike.map((e) => JSON.stringify(e)) },
  // Bedrock's chunk payloads: an event's JSON, base64 in `bytes`, or anything there.
  eventLike.map((e) => JSON.stringify({ bytes: Buffer.from(JSON.stringify(e)).toString('base64') })),
  fc.jsonValue().map((v) => JSON.stringify({ bytes: v })),
  fc.string({ maxLength: 50 }),
  fc.constantFrom('[DONE]', '{', '', 'null', '{"usage":'),
)

const info: RequestInfo = { method: 'POST', path: '/v1/chat/completions', query: '', headers: {}, body: { model: 'm', stream: true } }

function checkResult(r: ReturnType<ReturnType<(typeof PROVIDERS)[number]['meter']>['result']>): void {
  if (!r.usage) return
  for (const [k, v] of Object.entries(r.usage)) {
    if (typeof v !== 'number') continue
    expect(Number.isFinite(v), `${k}=${v}`).toBe(true)
    expect(v, k).toBeGreaterThanOrEqual(0)
  }
}

describe('every provider meter', () => {
  for (const provider of PROVIDERS) {
    it(`${provider.name}: random events and bodies never throw, and usage stays finite and non-negative`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.constantFrom('message', 'message_start', 'message_delta', 'response.completed', 'error', '', 'chunk', 'metadata', 'contentBlockDelta', 'messageStop'), data), { maxLength: 12 }),
          fc.oneof(fc.constant(undefined), eventLike),
          (evs, body) => {
            const shape = provider.inspect({ ...info, body: { model: 'gpt-4o', stream: true } })
            const m = provider.meter(shape, info)
            for (const [name, d] of evs) m.event(name, d)
            if (body !== undefined) m.json(body)
            checkResult(m.result())
          },
        ),
        { ...RUNS, numRuns: 600 },
      )
    })
  }

  // Providers whose meter follows the path: each of their other meters, on the same input.
  const byPath: [string, string][] = [
    ['bedrock', '/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream'],
    ['vertex', '/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent'],
  ]
  for (const [name, path] of byPath) {
    it(`${name} ${path.split(/[/:]/).pop()}: random events and bodies never throw, and usage stays finite and non-negative`, () => {
      const provider = PROVIDERS.find((p) => p.name === name)!
      const req = { ...info, path }
      fc.assert(
        fc.property(fc.array(fc.tuple(fc.constantFrom('metadata', 'contentBlockDelta', 'messageStop', 'chunk', 'message', ''), data), { maxLength: 12 }), fc.oneof(fc.constant(undefined), eventLike), (evs, body) => {
          const m = provider.meter(provider.inspect(req), req)
          for (const [n, d] of evs) m.event(n, d)
          if (body !== undefined) m.json(body)
          checkResult(m.result())
        }),
        { ...RUNS, numRuns: 600 },
      )
    })
  }

  it('inspect never throws on random requests', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PROVIDERS), fc.string({ maxLength: 60 }), fc.string({ maxLength: 30 }), fc.jsonValue(), (p, path, query, body) => {
        p.inspect({ method: 'POST', path: '/' + path, query, headers: {}, body })
      }),
      RUNS,
    )
  })
})

describe('JSON body collection', () => {
  it('JsonCollector and objectAfterKey never throw on random bodies, cut anywhere, small limits included', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue().map((v) => JSON.stringify(v)), fc.string({ maxLength: 300 })), fc.array(fc.nat(), { maxLength: 6 }), fc.nat({ max: 200 }), (text, cuts, limit) => {
        const c = new JsonCollector(limit, 64)
        for (const piece of splitAt(Buffer.from(text), cuts)) c.push(piece)
        c.parse()
        objectAfterKey(text, 'usage')
      }),
      RUNS,
    )
  })
})

describe('BodyTap', () => {
  it('decodes or gives up on random and corrupted compressed bodies, and always ends', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 500 }),
        fc.constantFrom('gzip', 'br', 'deflate', 'zstd', 'identity', 'x-gzip', 'nonsense'),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 5 }),
        async (bytes, encoding, compress, cuts) => {
          let body = Buffer.from(bytes)
          if (compress && encoding === 'gzip') body = zlib.gzipSync(body).subarray(0, Math.max(1, body.length))
          if (compress && encoding === 'br') body = zlib.brotliCompressSync(body)
          let got = 0
          const tap = new BodyTap(encoding, (b) => {
            got += b.length
          })
          for (const piece of splitAt(body, cuts)) tap.write(piece)
          await tap.end()
          expect(got).toBeGreaterThanOrEqual(0)
        },
      ),
      { numRuns: 500, seed: 20261121 },
    )
  })
})

describe('a meter that throws', () => {
  it('stops metering that body only: the tap neither throws nor crashes, plain or compressed', async () => {
    for (const encoding of [undefined, 'gzip']) {
      const tap = new BodyTap(encoding, () => {
        throw new Error('meter bug')
      })
      const body = Buffer.from('data: {}\n\n')
      tap.write(encoding ? zlib.gzipSync(body) : body)
      tap.write(body)
      await tap.end()
      expect(tap.broken).toBe(true)
    }
  })
})
