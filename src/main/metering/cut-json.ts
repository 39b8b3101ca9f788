import { closingQuote, skipSpace } from './json-scan'
import { OutputText } from './output-text'
import { isObject } from './usage'

/**
 * What a JSON answer cut before its end (the upstream reset, or the client left, mid-body) says,
 * read from the part that arrived: the model had finished (a non-streamed answer is sent once its
 * generation is over), so its whole output was billed, but its usage, at the body's end, usually
 * never came. So its output is estimated from the text that did arrive, as a cut stream's is.
 */
export interface CutJson {
  /** The string values of the output's text fields that arrived, the last up to the cut; bounded as a stream's text is. */
  text: OutputText
  /** Top-level string fields that arrived whole (by default `model`, `id`, `service_tier`; see `CutJsonShape`). */
  fields: Record<string, string>
  /** The top-level usage object, when it arrived whole (a non-streamed answer's usage is its bill). */
  usage?: Record<string, unknown>
}

/** Where an answer keeps what `readCutJson` reads: Anthropic's and OpenAI's by default. */
export interface CutJsonShape {
  /** The key of the usage object (default `usage`). */
  usageKey?: string
  /** The string fields read whole (default `model`, `id`, `service_tier`). */
  fields?: ReadonlySet<string>
  /** The depth of the answer object: 1 (default) for a bare one, 2 for one wrapped in an envelope (`{response: {…}}`). */
  depth?: number
  /** Keys whose object or array values hold no output: their strings are not read as text (Gemini's `groundingMetadata` repeats the answer's). */
  ignore?: ReadonlySet<string>
  /**
   * Keys whose object values are output as their JSON text, up to the cut (a tool call's input,
   * which a stream sends as pieces of JSON text); the strings inside are not read again as text.
   */
  objects?: ReadonlySet<string>
}

const FIELDS: ReadonlySet<string> = new Set(['model', 'id', 'service_tier'])

/**
 * How far into a cut body the reader walks. It runs on the event loop, once per cut answer, and a
 * body may hold 64 MB of anything (deep nesting, number arrays, a million small keys): walked whole,
 * that blocked every other call for half a second. Past this point the text is only extrapolated
 * (the part read says how much of the body was output text) and a usage beyond it is not read.
 */
export const CUT_SCAN_CHARS = 4 * 1024 * 1024

/**
 * Reads `body`, a JSON object's text cut anywhere: the string values of the keys in `keys` (at any
 * depth) go to `text`, decoded; the last, cut in the middle, up to the cut. One pass over the text,
 * strings skipped with a native search; no value is decoded past OutputText's bound (the rest of a
 * longer one is only counted, so the estimate extrapolates to it), so degenerate output costs no
 * more than a cut stream's.
 */
export function readCutJson(body: string, keys: ReadonlySet<string>, shape: CutJsonShape = {}): CutJson {
  const out: CutJson = { text: new OutputText(), fields: {} }
  const usageKey = shape.usageKey ?? 'usage'
  const fields = shape.fields ?? FIELDS
  const top = shape.depth ?? 1
  const ignore = shape.ignore
  const objects = shape.objects
  /** The depth outside an ignored value (or an object read as JSON text) being read, or -1. */
  let ignoredAt = -1
  /** Where the object read as JSON text (`objects`) being read opens, or -1. */
  let objectAt = -1
  const n = Math.min(body.length, CUT_SCAN_CHARS)
  let textChars = 0
  let depth = 0
  let usageAt = -1
  let usageEnd = -1
  let i = 0
  while (i < n) {
    let q = body.indexOf('"', i)
    if (q >= n) q = -1
    const end = q === -1 ? n : q
    for (let k = i; k < end; k++) {
      const c = body.charCodeAt(k)
      if (c === 123 /* { */ || c === 91 /* [ */) depth++
      else if (c === 125 /* } */ || c === 93 /* ] */) {
        depth--
        if (depth === ignoredAt) {
          ignoredAt = -1
          if (objectAt >= 0) {
            pushRaw(out.text, body, objectAt, k + 1)
            textChars += k + 1 - objectAt
          }
          objectAt = -1
        }
        if (depth === top && usageAt >= 0 && usageEnd < 0) usageEnd = k
      }
    }
    if (q === -1) break
    const close = closingQuote(body, q, n)
    if (close === -1) break
    const m = skipSpace(body, close + 1)
    if (body.charCodeAt(m) !== 58 /* : */) {
      i = close + 1
      continue
    }
    // A key: its value follows.
    const v = skipSpace(body, m + 1)
    if (v >= n) break
    const c = body.charCodeAt(v)
    if (c === 123 && depth === top && usageAt < 0 && body.slice(q + 1, close) === usageKey) usageAt = v
    if (ignoredAt < 0 && (c === 123 || c === 91) && (ignore || objects) && close - q - 1 <= 20) {
      const k = body.slice(q + 1, close)
      if (ignore?.has(k)) ignoredAt = depth
      else if (c === 123 && objects?.has(k)) {
        ignoredAt = depth
        objectAt = v
      }
    }
    if (c !== 34 /* " */) {
      i = v
      continue
    }
    const key = close - q - 1 <= 20 ? body.slice(q + 1, close) : ''
    const valueEnd = closingQuote(body, v, n)
    const raw = body.slice(v + 1, valueEnd === -1 ? n : valueEnd)
    if (keys.has(key)) {
      if (ignoredAt < 0) {
        push(out.text, raw)
        textChars += raw.length
      }
    } else if (depth === top && valueEnd !== -1 && fields.has(key)) {
      const s = decode(raw)
      if (s !== undefined) out.fields[key] = s
    }
    if (valueEnd === -1) break
    i = valueEnd + 1
  }
  // An object read as JSON text, cut inside (or at the end of the part read): up to there.
  if (objectAt >= 0) {
    pushRaw(out.text, body, objectAt, n)
    textChars += n - objectAt
  }
  // A body longer than the part read: the rest is output text in the share the part read held.
  if (body.length > n && textChars > 0) out.text.dropped += Math.round(((body.length - n) * Math.min(textChars, n)) / n)
  if (usageAt >= 0 && usageEnd > usageAt) {
    try {
      const u: unknown = JSON.parse(body.slice(usageAt, usageEnd + 1))
      if (isObject(u)) out.usage = u
    } catch {
      // not a whole object after all: no usage
    }
  }
  return out
}

/** A string value's raw (escaped) text into `text`: decoded up to OutputText's bound, the rest only counted. */
function push(text: OutputText, raw: string): void {
  const max = OutputText.MAX_CHARS
  const kept = raw.length > max ? raw.slice(0, max) : raw
  text.push(decode(kept) ?? kept)
  if (raw.length > max) text.dropped += raw.length - max
}

/** `body`'s text from `start` to `end` as it is (JSON text), up to OutputText's bound, the rest only counted. */
function pushRaw(text: OutputText, body: string, start: number, end: number): void {
  const max = OutputText.MAX_CHARS
  text.push(body.slice(start, Math.min(end, start + max)))
  if (end - start > max) text.dropped += end - start - max
}

/** A JSON string's escaped text decoded; one cut inside an escape loses that escape. Undefined when it is not JSON. */
function decode(raw: string): string | undefined {
  for (let cut = 0; cut <= 5 && cut <= raw.length; cut++) {
    try {
      return JSON.parse(`"${cut === 0 ? raw : raw.slice(0, raw.length - cut)}"`) as string
    } catch {
      // a cut escape (`\`, `\u00`): try without its last characters
    }
  }
  return undefined
}
