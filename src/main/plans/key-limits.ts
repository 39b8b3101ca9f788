import type { IncomingHttpHeaders } from 'node:http'
import { header, type MeterReading, type MeterWindow, num, resetTime } from './types'

const ANTHROPIC = /^anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)$/
const OPENAI = /^x-ratelimit-(limit|remaining|reset)-([a-z0-9_-]+)$/
/** The family without a name (`x-ratelimit-limit`), as OpenRouter's own 429s send it. */
const PLAIN = /^x-ratelimit-(limit|remaining|reset)$/

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, 'µs': 0.001, ns: 0.000_001 }
const DURATION = /^(?:\d+(?:\.\d+)?(?:d|h|ms|m|s|us|µs|ns)\s*)+$/

/**
 * A wait: plain seconds (Cerebras's `33011.38`), or a duration of units as OpenAI, Groq and
 * Google send it (Go's and protobuf's: `20ms`, `6m0s`, `2m59.56s`, `161h39m41.3s`, `1.5µs`;
 * `d` for days, which none of them is known to send, read as 24 hours, not left out). Null for
 * anything else: a text with a part that is not a duration is not read in part.
 */
export function durationMs(v: string | undefined): number | null {
  if (!v) return null
  const plain = num(v)
  if (plain !== null) return plain * 1000
  const text = v.trim()
  if (!DURATION.test(text)) return null
  let total = 0
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(d|h|ms|m|s|us|µs|ns)/g)) total += Number(m[1]) * UNIT_MS[m[2]]
  return total
}

/**
 * The reset of the family without a name: OpenRouter's is the epoch in ms (`1788220800000`); an
 * epoch in seconds, or a small number as seconds to wait, or a duration are read too.
 */
function plainReset(v: string | undefined, now: number): number | null {
  const n = num(v)
  if (n !== null && n >= 1_000_000_000) return resetTime(v)
  const d = durationMs(v)
  return d === null ? resetTime(v) : now + d
}

interface Part {
  limit?: number | null
  remaining?: number | null
  reset?: number | null
  /** The window's length in minutes, when the vendor says it. */
  minutes: number | null
}

/** A window's length in minutes from the end of its name, as Cerebras names them (`requests-day`, `tokens-minute`). */
const SUFFIX_MINUTES: Record<string, number> = { minute: 1, hour: 60, day: 1440 }

/**
 * The minutes of the calendar month (UTC) that holds `now`: a `-month` window is read as the
 * calendar month, 40,320 minutes (28 days) to 44,640 (31), not a fixed 30 days.
 */
export function calendarMonthMinutes(now: number): number {
  const d = new Date(now)
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  return (end - start) / 60_000
}

/**
 * The length of an OpenAI-style window: the name's suffix where it has one (Cerebras's `-minute`,
 * `-hour`, `-day`; `-month`, the calendar month that holds the reading); Groq's `requests` are per
 * day and its `tokens` per minute (Groq's rate-limit docs); else unknown (OpenAI and others do not
 * say what period their `x-ratelimit-*` headers count).
 */
function openaiMinutes(name: string, provider: string | undefined, now: number): number | null {
  const suffix = /-(minute|hour|day|month)$/.exec(name)
  if (suffix) return suffix[1] === 'month' ? calendarMonthMinutes(now) : SUFFIX_MINUTES[suffix[1]]
  if (provider === 'groq') return name === 'requests' ? 1440 : name === 'tokens' ? 1 : null
  return null
}

function fromParts(parts: Map<string, Part>): MeterWindow[] {
  const out: MeterWindow[] = []
  for (const [key, p] of parts) {
    // The unnamed family is a count of requests, unless the answer also names its requests' limit.
    const name = key === '' ? 'requests' : key
    if (key === '' && parts.has('requests')) continue
    if (p.limit == null || p.remaining == null || !(p.limit > 0)) continue
    out.push({
      name,
      utilization: Math.min(1, Math.max(0, (p.limit - p.remaining) / p.limit)),
      resets_at: p.reset ?? null,
      status: p.remaining <= 0 ? 'rejected' : '',
      window_minutes: p.minutes,
    })
  }
  return out
}

/**
 * An API key's rate limits: Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,
 * output-tokens}-{limit,remaining,reset}` (reset RFC 3339) and the OpenAI-style
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens,…}` (reset a duration such as `6m0s`)
 * that OpenAI, Groq and others send (Cerebras's with the period in the name,
 * `x-ratelimit-limit-requests-day`), and the family without a name, `x-ratelimit-{limit,remaining,
 * reset}`, which OpenRouter sends only on a 429 of its own limits (reset the epoch in ms; its
 * answers that succeed carry none): a window `requests`. Utilization is the used share of the limit. The window's
 * length: a minute for Anthropic's (its limits are per minute), else what `openaiMinutes` knows of
 * `provider`'s (the proxy's provider name), null when it is not known.
 */
export function readKeyLimits(headers: IncomingHttpHeaders, now = Date.now(), provider?: string): MeterReading | null {
  const parts = new Map<string, Part>()
  const details: Record<string, string> = {}
  const part = (n: string, minutes: number | null) => {
    let p = parts.get(n)
    if (!p) parts.set(n, (p = { minutes }))
    return p
  }
  for (const [name, raw] of Object.entries(headers)) {
    if (raw === undefined) continue
    const value = Array.isArray(raw) ? raw[0] : raw
    let m = ANTHROPIC.exec(name)
    if (m) {
      const p = part(m[1], 1)
      if (m[2] === 'reset') p.reset = resetTime(value)
      else p[m[2] as 'limit' | 'remaining'] = num(value)
      continue
    }
    m = OPENAI.exec(name)
    if (m) {
      const p = part(m[2], openaiMinutes(m[2], provider, now))
      if (m[1] === 'reset') {
        const d = durationMs(header(headers, name))
        p.reset = d === null ? null : now + d
      } else p[m[1] as 'limit' | 'remaining'] = num(value)
      continue
    }
    m = PLAIN.exec(name)
    if (m) {
      // OpenRouter's count requests (its free models' per minute and per day); it does not say which.
      const p = part('', null)
      if (m[1] === 'reset') p.reset = plainReset(value, now)
      else p[m[1] as 'limit' | 'remaining'] = num(value)
      continue
    }
    if (name.startsWith('anthropic-ratelimit-') && !name.startsWith('anthropic-ratelimit-unified-')) details[name.slice(20)] = value
  }
  const windows = fromParts(parts)
  if (windows.length === 0) return null
  return { kind: 'key', windows, details }
}
