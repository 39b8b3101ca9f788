import type { IncomingHttpHeaders } from 'node:http'
import { type MeterReading, type MeterWindow, num, resetTime } from './types'

const PREFIX = 'anthropic-ratelimit-unified-'
/** The per-window fields (Claude Code reads `<claim>-utilization`, `-reset`, `-status`, `-surpassed-threshold`). */
const FIELD = /^(.+)-(utilization|reset|status|surpassed-threshold)$/
/** Claims that are usage windows (`5h`, `7d`, `7d_opus`…), as against account-wide flags such as `overage`. */
const WINDOW_CLAIM = /^(5h|7d)(_|$)/

/**
 * Whether a claim's figures are a window of the plan, as Claude Code shows them: its usage windows
 * and `overage` (Claude Code 2.1.337 reads `-utilization` for `5h`, `7d`, `7d_oi` and `overage`,
 * and names `seven_day_opus`, `seven_day_sonnet` when one refuses). The other claims it reads are
 * no window: `grace-5h`, `grace-7d` (a grace zone past the limit), `slow-budget` (the weekly
 * allowance of lower-priority calls), `overage-period-monthly`, `overage-period-channel` (a spend
 * limit's share); they, and claims not known yet, are kept in `details` as they came.
 */
function isWindow(claim: string): boolean {
  return WINDOW_CLAIM.test(claim) || claim === 'overage'
}

/**
 * Long claim names whose per-claim headers are not `7d_` and the rest: Claude Code 2.1.337 reads
 * `seven_day_overage_included` (its "Fable limit") from `anthropic-ratelimit-unified-7d_oi-*`.
 */
const SHORT_CLAIM: Record<string, string> = { five_hour: '5h', seven_day: '7d', seven_day_overage_included: '7d_oi' }

/**
 * The window a claim's long name is reported under: `representative-claim` says `five_hour`,
 * `seven_day`, `seven_day_overage_included`, `seven_day_opus`… where the per-claim headers say
 * `5h`, `7d`, `7d_oi`, `7d_opus`; null for a claim that is no window (`overage`).
 */
function windowOfClaim(claim: string | undefined): string | null {
  if (claim === undefined) return null
  if (Object.hasOwn(SHORT_CLAIM, claim)) return SHORT_CLAIM[claim]
  if (claim.startsWith('seven_day_')) return `7d_${claim.slice('seven_day_'.length)}`
  return null
}

/**
 * A Claude subscription's windows, as Anthropic sends them on every response to an OAuth
 * credential (header names as Claude Code reads them): per claim (`5h`, `7d`, `7d_opus`,
 * `7d_sonnet`, `7d_oi`, `overage`…) `anthropic-ratelimit-unified-<claim>-utilization` (0..1),
 * `-reset` (epoch seconds), `-status` and `-surpassed-threshold`; account-wide `-status`,
 * `-reset`, `-representative-claim`, `-fallback`, `-overage-status`, `-overage-disabled-reason`…
 * Every header of the family is kept: the windows' figures as windows, and any other field (the
 * figures of a claim that is no window too: `grace-5h-utilization`…) in `details` under its name
 * without the prefix, a reset as an ISO time.
 */
export function readAnthropicUnified(headers: IncomingHttpHeaders): MeterReading | null {
  const windows = new Map<string, Partial<MeterWindow> & { name: string }>()
  const details: Record<string, string> = {}
  let any = false
  let accountReset: number | null = null
  for (const [name, raw] of Object.entries(headers)) {
    if (!name.startsWith(PREFIX) || raw === undefined) continue
    any = true
    const value = Array.isArray(raw) ? raw[0] : raw
    const rest = name.slice(PREFIX.length)
    const m = FIELD.exec(rest)
    if (!m || !isWindow(m[1])) {
      // The account-wide reset (epoch seconds) reads as every other reset in details does: ISO.
      const at = rest === 'reset' || m?.[2] === 'reset' ? resetTime(value) : null
      if (rest === 'reset') accountReset = at
      details[rest] = at !== null ? new Date(at).toISOString() : value
      continue
    }
    const [, claim, field] = m
    let w = windows.get(claim)
    if (!w) windows.set(claim, (w = { name: claim }))
    if (field === 'utilization') {
      // The contract's 0..1: a reading past the whole window (overage) is a full one, its status says the rest.
      const u = num(value)
      w.utilization = u === null ? undefined : Math.min(1, Math.max(0, u))
    }
    else if (field === 'reset') w.resets_at = resetTime(value)
    else if (field === 'status') w.status = value
    else details[rest] = value
  }
  if (!any) return null
  // A refusal for a used-up window (429, account-wide `status: rejected`) names that window in
  // `representative-claim` and when calls are allowed again in the account-wide `reset`, as Claude
  // Code reads it ("limit reached, resets at …"); it need not carry the claim's own utilization.
  // That window is full until then.
  const refused = details.status === 'rejected' ? windowOfClaim(details['representative-claim']) : null
  if (refused) {
    let w = windows.get(refused)
    if (!w) windows.set(refused, (w = { name: refused }))
    if (w.utilization === undefined) {
      w.utilization = 1
      w.status ??= 'rejected'
      w.resets_at ??= accountReset
    }
  }
  const out: MeterWindow[] = []
  for (const w of windows.values()) {
    // A window's claim refused with no utilization of its own is used up.
    if (w.utilization === undefined && w.status === 'rejected' && WINDOW_CLAIM.test(w.name)) w.utilization = 1
    // A claim with only a status (no utilization) is an account-wide flag, not a window to draw.
    if (w.utilization === undefined) {
      if (w.status !== undefined) details[`${w.name}-status`] = w.status
      if (w.resets_at != null) details[`${w.name}-reset`] = new Date(w.resets_at).toISOString()
      continue
    }
    out.push({
      name: w.name,
      utilization: w.utilization,
      resets_at: w.resets_at ?? null,
      status: w.status ?? '',
      window_minutes: w.name === '5h' ? 300 : w.name.startsWith('7d') ? 10_080 : null,
    })
  }
  return { kind: 'plan', windows: out, details }
}
