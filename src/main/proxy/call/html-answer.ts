import type { IncomingHttpHeaders } from 'node:http'
import type { Meter, MeterResult } from '../../providers/types'
import { BodyTap, JsonCollector } from '../../metering/body-tap'
import { SseParser } from '../../metering/sse'
import { emptyUsage } from '../../metering/usage'
import type { CallState } from './state'

export const NOT_A_MODEL_ANSWER = 'not_a_model_answer: text/html'

/**
 * Meters a successful answer labelled `text/html`. Most are web pages (a captive portal's
 * sign-in, a proxy's block page, a base_url that names a web site): no model ran. But some
 * gateways and local servers (cortex.cpp) label a model's real JSON or SSE answer so. The body
 * says which: its first byte that is not white space opens a JSON body (`{` or `[`), a page
 * (`<`), or else an SSE stream; it is metered as such, and an answer its meter found no usage in
 * is recorded as no model's answer ($0, never estimated, error `not_a_model_answer: text/html`).
 */
export function attachHtmlAnswerMeter(s: CallState, uheaders: IncomingHttpHeaders): void {
  const meter = s.ctx.provider.meter(s.ctx.shape, s.info)
  s.meter = unlessNoUsage(s, meter)
  if (meter.headers) meter.headers(uheaders)
  let sink: ((b: Buffer) => void) | null = null
  const sniff = (b: Buffer): void => {
    const c = firstNonSpace(b)
    if (c < 0) return // white space only: nothing to tell by (and nothing either reader needs)
    if (c === 0x7b || c === 0x5b) {
      const json = new JsonCollector(undefined, undefined, meter.largeJsonPaths)
      s.json = json
      sink = json.push
    } else if (c === 0x3c) {
      sink = ignore
    } else {
      const parser = new SseParser((e, d) => meter.event(e, d))
      s.sse = parser
      sink = (chunk) => parser.write(chunk)
    }
    sink(b)
  }
  const enc = uheaders['content-encoding']
  s.tap = new BodyTap(typeof enc === 'string' ? enc : undefined, (b) => (sink ?? sniff)(b))
}

/**
 * The meter, whose result is no model's answer ($0 usage, never estimated) when it holds no usage
 * (nor, for a JSON body cut mid-transfer, any output text); a model's answer read as SSE is
 * recorded as streamed.
 */
function unlessNoUsage(s: CallState, meter: Meter): Meter {
  /** A JSON body cut mid-transfer was read (its meter's `jsonCut`). */
  let cut = false
  return {
    event: (name, data) => meter.event(name, data),
    json: (body) => meter.json(body),
    jsonElements: meter.jsonElements && ((elements) => meter.jsonElements!(elements)),
    jsonCut:
      meter.jsonCut &&
      ((body) => {
        cut = true
        meter.jsonCut!(body)
      }),
    largeJsonPaths: meter.largeJsonPaths,
    result: (): MeterResult => {
      const r = meter.result()
      // A job charged later (xAI video, Perplexity async) only when the answer named it: a page
      // answering its POST made none, and is not charged what its request said it would cost.
      if (r.usage || r.backgroundUsage || (r.chargeLater && r.responseId) || (r.batchResults && r.batchResults.length > 0)) {
        if (s.sse) s.streamed = true
        return r
      }
      // A JSON body cut mid-transfer in which a model's output arrived: estimated from it, as one labelled JSON is.
      if (cut && r.outputText) return r
      // Usage that is empty, not missing: the recorder estimates a successful answer with none.
      return { usage: emptyUsage(), error: NOT_A_MODEL_ANSWER }
    },
  }
}

function ignore(): void {}

/** The first byte of `b` that is not JSON white space, or -1. */
function firstNonSpace(b: Buffer): number {
  for (let i = 0; i < b.length; i++) {
    const c = b[i]
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return c
  }
  return -1
}
