import type { IncomingHttpHeaders } from 'node:http'
import { header, type MeterReading, type MeterWindow, num, resetTime } from './types'

const FAMILY = /^x-([a-z0-9-]+)-(primary|secondary)-used-percent$/

/** A window's name from its length, as people say it (`5h`, `7d`), else the slot. */
function nameOf(slot: string, minutes: number | null, limit: string): string {
  let base = slot
  if (minutes !== null && minutes > 0) {
    base = minutes % 1440 === 0 ? `${minutes / 1440}d` : minutes % 60 === 0 ? `${minutes / 60}h` : `${minutes}m`
  }
  return limit === 'codex' ? base : `${base}_${limit.replace(/^codex-/, '').replace(/-/g, '_')}`
}

/**
 * Codex's plan windows (ChatGPT login), header names as Codex reads them
 * (codex-rs/codex-api/src/rate_limits.rs): per limit family `x-<limit>-primary-*` and
 * `x-<limit>-secondary-*` (the default family is `codex`): `used-percent` (0..100),
 * `window-minutes`, `reset-at` (epoch seconds; older servers send `reset-after-seconds`), and
 * `x-<limit>-limit-name`; `x-codex-credits-*`, `x-codex-active-limit` and every other `x-codex-`
 * header are kept in `details`. A slot at 0% with no length and no reset is no window.
 */
export function readCodex(headers: IncomingHttpHeaders, now = Date.now()): MeterReading | null {
  const windows: MeterWindow[] = []
  const details: Record<string, string> = {}
  const used = new Set<string>()
  for (const name of Object.keys(headers)) {
    const m = FAMILY.exec(name)
    if (!m) continue
    const [, limit, slot] = m
    const prefix = `x-${limit}-${slot}-`
    const pct = num(header(headers, name))
    if (pct === null) continue
    const minutes = num(header(headers, `${prefix}window-minutes`))
    let resets = resetTime(header(headers, `${prefix}reset-at`))
    const after = num(header(headers, `${prefix}reset-after-seconds`))
    if (resets === null && after !== null) resets = now + after * 1000
    for (const f of ['used-percent', 'window-minutes', 'reset-at', 'reset-after-seconds']) used.add(`${prefix}${f}`)
    // A slot at 0% with no length and no reset is no window (a plan with one window is sent its
    // second slot so: `0`, `0`, an empty reset-at), as codex-rs's parse_rate_limit_window reads it.
    if (pct === 0 && !minutes && resets === null) continue
    windows.push({
      name: nameOf(slot, minutes, limit),
      utilization: Math.min(100, Math.max(0, pct)) / 100,
      resets_at: resets,
      status: pct >= 100 ? 'rejected' : '',
      window_minutes: minutes,
    })
  }
  for (const [name, raw] of Object.entries(headers)) {
    if (!name.startsWith('x-codex-') || used.has(name) || raw === undefined) continue
    details[name.slice(2)] = Array.isArray(raw) ? raw[0] : raw
  }
  if (windows.length === 0 && Object.keys(details).length === 0) return null
  // Two windows of one length (a family without window-minutes) keep their slot names apart.
  const seen = new Set<string>()
  for (const w of windows) {
    if (seen.has(w.name)) w.name = `${w.name}_${windows.indexOf(w)}`
    seen.add(w.name)
  }
  return { kind: 'plan', windows, details }
}

/**
 * Codex over WebSocket gets its windows as a `codex.rate_limits` event instead of headers
 * (codex-rs rate_limits.rs parse_rate_limit_event): `{type, rate_limits: {primary, secondary:
 * {used_percent, window_minutes, reset_at}}, credits, metered_limit_name}`. The same header names
 * are rebuilt from it, so one reader serves both.
 */
export function codexEventHeaders(text: string): IncomingHttpHeaders | null {
  let ev: any
  try {
    ev = JSON.parse(text)
  } catch {
    return null
  }
  if (!ev || ev.type !== 'codex.rate_limits') return null
  const limit = String(ev.metered_limit_name ?? ev.limit_name ?? 'codex').trim().toLowerCase().replace(/_/g, '-') || 'codex'
  const out: IncomingHttpHeaders = {}
  for (const slot of ['primary', 'secondary'] as const) {
    const w = ev.rate_limits?.[slot]
    if (!w || typeof w.used_percent !== 'number') continue
    out[`x-${limit}-${slot}-used-percent`] = String(w.used_percent)
    if (typeof w.window_minutes === 'number') out[`x-${limit}-${slot}-window-minutes`] = String(w.window_minutes)
    if (typeof w.reset_at === 'number') out[`x-${limit}-${slot}-reset-at`] = String(w.reset_at)
  }
  const c = ev.credits
  if (c && typeof c === 'object') {
    if (typeof c.has_credits === 'boolean') out['x-codex-credits-has-credits'] = String(c.has_credits)
    if (typeof c.unlimited === 'boolean') out['x-codex-credits-unlimited'] = String(c.unlimited)
    if (c.balance != null) out['x-codex-credits-balance'] = String(c.balance)
  }
  if (typeof ev.plan_type === 'string') out['x-codex-plan-type'] = ev.plan_type
  return out
}

/**
 * A refusal on the socket (the plan's allowance used up, a 429) carries the answer's headers
 * inside the error frame, as codex-rs responses_websocket.rs reads them:
 * `{type: 'error', status, error: {type: 'usage_limit_reached', …}, headers: {'x-codex-primary-used-percent': '100.0', …}}`
 * (values strings, numbers or booleans). Those headers, as an HTTP answer's would be; null without any.
 * They name no reset: the error's `resets_at` (or `resets_in_seconds`) is the reset of the one
 * window they name full (with two full, it is the later one's, and neither is given it).
 */
export function codexErrorHeaders(text: string): IncomingHttpHeaders | null {
  let ev: any
  try {
    ev = JSON.parse(text)
  } catch {
    return null
  }
  if (!ev || ev.type !== 'error' || !ev.headers || typeof ev.headers !== 'object' || Array.isArray(ev.headers)) return null
  const out: IncomingHttpHeaders = {}
  for (const [name, value] of Object.entries(ev.headers)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[name.toLowerCase()] = String(value)
  }
  if (Object.keys(out).length === 0) return null
  return withRefusalReset(out, ev.error)
}

/**
 * A refusal's x-codex headers name no reset; its error says when calls are allowed again
 * (`resets_at`, epoch seconds, or `resets_in_seconds`, as codex-rs reads a `usage_limit_reached`
 * error): that is the reset of the one window the headers name full, when they name one and no
 * reset of it (with two full, neither is given it). The headers with that reset; `headers` as
 * they were otherwise.
 */
export function withRefusalReset(headers: IncomingHttpHeaders, error: unknown): IncomingHttpHeaders {
  const e = error && typeof error === 'object' ? (error as { resets_at?: unknown; resets_in_seconds?: unknown }) : undefined
  const at = typeof e?.resets_at === 'number' ? String(e.resets_at) : null
  const after = typeof e?.resets_in_seconds === 'number' ? String(e.resets_in_seconds) : null
  if (!at && !after) return headers
  const full = Object.keys(headers).filter((n) => FAMILY.test(n) && (num(header(headers, n)) ?? 0) >= 100).map((n) => n.slice(0, -'used-percent'.length))
  if (full.length !== 1 || headers[`${full[0]}reset-at`] !== undefined || headers[`${full[0]}reset-after-seconds`] !== undefined) return headers
  return at ? { ...headers, [`${full[0]}reset-at`]: at } : { ...headers, [`${full[0]}reset-after-seconds`]: after! }
}
