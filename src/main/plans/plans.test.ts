import { describe, expect, it } from 'vitest'
import { PlanNoticeLog } from '../desktop-logic/tray-plans'
import { readAnthropicUnified } from './anthropic-unified'
import { readCodeAssistQuota } from './code-assist'
import { readCodeAssistRefusal } from './code-assist-refusal'
import { readCodex } from './codex'
import { durationMs, readKeyLimits } from './key-limits'
import { readMeter } from './read'
import { PARK_MS, PlanTracker } from './tracker'

const T0 = Date.parse('2026-11-23T10:00:00Z')
const sec = (ms: number) => String(Math.floor(ms / 1000))

describe('vendor meters from response headers', () => {
  it('reads Anthropic unified windows, per-model ones, and keeps every other field', () => {
    const r = readAnthropicUnified({
      'anthropic-ratelimit-unified-status': 'allowed',
      'anthropic-ratelimit-unified-representative-claim': 'five_hour',
      'anthropic-ratelimit-unified-5h-utilization': '0.43',
      'anthropic-ratelimit-unified-5h-reset': sec(T0 + 3600_000),
      'anthropic-ratelimit-unified-5h-status': 'allowed',
      'anthropic-ratelimit-unified-7d-utilization': '0.17',
      'anthropic-ratelimit-unified-7d-reset': sec(T0 + 5 * 86_400_000),
      'anthropic-ratelimit-unified-7d_opus-utilization': '0.81',
      'anthropic-ratelimit-unified-7d_opus-status': 'allowed_warning',
      'anthropic-ratelimit-unified-overage-status': 'rejected',
      'anthropic-ratelimit-unified-overage-disabled-reason': 'org_level_disabled',
      'anthropic-ratelimit-unified-brand-new-field': 'x',
      'anthropic-ratelimit-unified-reset': sec(T0 + 3600_000),
      'anthropic-ratelimit-unified-overage-reset': sec(T0 + 2 * 3600_000),
    })!
    expect(r.kind).toBe('plan')
    expect(r.windows.map((w) => [w.name, w.utilization, w.status])).toEqual([
      ['5h', 0.43, 'allowed'],
      ['7d', 0.17, ''],
      ['7d_opus', 0.81, 'allowed_warning'],
    ])
    expect(r.windows[0].resets_at).toBe(T0 + 3600_000)
    expect(r.details).toMatchObject({
      status: 'allowed',
      'representative-claim': 'five_hour',
      'overage-status': 'rejected',
      'overage-disabled-reason': 'org_level_disabled',
      'brand-new-field': 'x',
      // Every reset in details reads the same way: the account-wide one as the overage's.
      reset: new Date(T0 + 3600_000).toISOString(),
      'overage-reset': new Date(T0 + 2 * 3600_000).toISOString(),
    })
  })

  it("reads a Claude plan's refusal as its used-up window full: the representative claim, or a window claim rejected with no utilization", () => {
    const refused = readAnthropicUnified({
      'anthropic-ratelimit-unified-status': 'rejected',
      'anthropic-ratelimit-unified-reset': sec(T0 + 3600_000),
      'anthropic-ratelimit-unified-representative-claim': 'seven_day_sonnet',
      'anthropic-ratelimit-unified-overage-status': 'rejected',
    })!
    // The overage's status stays an account-wide flag, not a window.
    expect(refused.windows).toEqual([{ name: '7d_sonnet', utilization: 1, resets_at: T0 + 3600_000, status: 'rejected', window_minutes: 10_080 }])
    expect(refused.details).toMatchObject({ 'overage-status': 'rejected' })
    const claim = readAnthropicUnified({ 'anthropic-ratelimit-unified-5h-status': 'rejected', 'anthropic-ratelimit-unified-5h-reset': sec(T0 + 600_000) })!
    expect(claim.windows).toEqual([{ name: '5h', utilization: 1, resets_at: T0 + 600_000, status: 'rejected', window_minutes: 300 }])
    // Allowed (or the overage claim named): nothing is filled.
    expect(readAnthropicUnified({ 'anthropic-ratelimit-unified-status': 'allowed', 'anthropic-ratelimit-unified-representative-claim': 'five_hour' })!.windows).toEqual([])
    expect(readAnthropicUnified({ 'anthropic-ratelimit-unified-status': 'rejected', 'anthropic-ratelimit-unified-representative-claim': 'overage' })!.windows).toEqual([])
  })

  it('reads Codex primary/secondary windows (percent, minutes, reset) and other limit families', () => {
    const r = readCodex({
      'x-codex-primary-used-percent': '42.5',
      'x-codex-primary-window-minutes': '300',
      'x-codex-primary-reset-at': sec(T0 + 7200_000),
      'x-codex-secondary-used-percent': '13',
      'x-codex-secondary-window-minutes': '10080',
      'x-codex-secondary-reset-after-seconds': '86400',
      'x-codex-bengalfox-primary-used-percent': '80',
      'x-codex-credits-has-credits': 'false',
      'x-codex-active-limit': 'codex',
    }, T0)!
    expect(r.windows.map((w) => [w.name, w.utilization, w.window_minutes])).toEqual([
      ['5h', 0.425, 300],
      ['7d', 0.13, 10080],
      ['primary_bengalfox', 0.8, null],
    ])
    expect(r.windows[1].resets_at).toBe(T0 + 86_400_000)
    expect(r.details).toMatchObject({ 'codex-credits-has-credits': 'false', 'codex-active-limit': 'codex' })
  })

  it('reads per-key limits of Anthropic and OpenAI style', () => {
    const a = readKeyLimits({
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '40',
      'anthropic-ratelimit-requests-reset': '2026-11-23T10:01:00Z',
      'anthropic-ratelimit-tokens-limit': '30000',
      'anthropic-ratelimit-tokens-remaining': '0',
    })!
    expect(a.windows.map((w) => [w.name, w.utilization, w.status])).toEqual([
      ['requests', 0.2, ''],
      ['tokens', 1, 'rejected'],
    ])
    const o = readKeyLimits({ 'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-requests': '6m0s' }, T0)!
    expect(o.windows[0]).toMatchObject({ name: 'requests', utilization: 0.002, resets_at: T0 + 360_000 })
    expect(durationMs('1h2m3.5s')).toBe(3_723_500)
    expect(durationMs('20ms')).toBe(20)
    expect(durationMs('1d2h')).toBe(93_600_000)
    expect(durationMs('1.5µs')).toBe(0.0015)
    expect(durationMs('2h soon')).toBeNull()
    expect(durationMs('1m30')).toBeNull()
    // The family with no name (OpenRouter's 429): requests, its reset the epoch in ms, else seconds to wait.
    const or = readKeyLimits({ 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(T0 + 42_000) }, T0)!
    expect(or.windows).toEqual([{ name: 'requests', utilization: 1, resets_at: T0 + 42_000, status: 'rejected', window_minutes: null }])
    expect(readKeyLimits({ 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': '42' }, T0)!.windows[0].resets_at).toBe(T0 + 42_000)
    // One that also names its requests' limit: that one is the window.
    const both = readKeyLimits({ 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '0', 'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '400' }, T0)!
    expect(both.windows.map((w) => [w.name, w.utilization])).toEqual([['requests', 0.2]])
  })

  it('prefers a plan meter and ignores responses without one', () => {
    expect(readMeter({ 'content-type': 'application/json' })).toBeNull()
    expect(readMeter({ 'anthropic-ratelimit-unified-5h-utilization': '0.5', 'anthropic-ratelimit-requests-limit': '5', 'anthropic-ratelimit-requests-remaining': '4' })!.kind).toBe('plan')
  })
})

describe('vendor meters from answer bodies', () => {
  it("reads Gemini Code Assist's quota buckets as one window per model (the used share), and refuses what is not one", () => {
    const reset = '2026-11-24T00:00:00Z'
    const r = readCodeAssistQuota({
      buckets: [
        { modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.25, remainingAmount: '25', resetTime: reset },
        { modelId: 'gemini-2.5-flash', tokenType: 'REQUESTS', remainingFraction: 1, resetTime: reset },
        { modelId: 'gemini-2.5-flash', tokenType: 'TOKENS', remainingFraction: 0.5, resetTime: reset },
        { tokenType: 'REQUESTS', remainingFraction: 0.1 },
        { modelId: 'gemini-3-pro-preview', tokenType: 'REQUESTS' },
      ],
    })!
    expect(r.kind).toBe('plan')
    expect(r.windows.map((w) => [w.name, w.utilization, w.resets_at, w.window_minutes])).toEqual([
      ['gemini-2.5-pro', 0.75, Date.parse(reset), null],
      ['gemini-2.5-flash', 0, Date.parse(reset), null],
      ['gemini-2.5-flash_tokens', 0.5, Date.parse(reset), null],
    ])
    expect(r.details).toEqual({ 'gemini-2.5-pro-remaining': '25' })
    // Used up: proto3's JSON leaves out remainingFraction (and remainingAmount) at 0.
    const spent = readCodeAssistQuota({ buckets: [{ modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', resetTime: reset }] })!
    expect(spent.windows.map((w) => [w.name, w.utilization, w.resets_at])).toEqual([['gemini-2.5-pro', 1, Date.parse(reset)]])
    expect(spent.details).toEqual({ 'gemini-2.5-pro-remaining': '0' })
    expect(readCodeAssistQuota({})).toBeNull()
    expect(readCodeAssistQuota({ buckets: [] })).toBeNull()
    expect(readCodeAssistQuota('not json')).toBeNull()
  })

  it("reads Gemini Code Assist's 429 for a used-up quota (QUOTA_EXHAUSTED) as its model's window full, and no other 429", () => {
    const info = (reason: string, metadata: Record<string, string>, key = '@type') => ({ [key]: 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'cloudcode-pa.googleapis.com', metadata })
    const refusal = (...details: object[]) => ({ error: { code: 429, message: 'You have exhausted your capacity on this model.', status: 'RESOURCE_EXHAUSTED', details } })
    const window = (r: ReturnType<typeof readCodeAssistRefusal>) => r && r.windows.map((w) => [w.name, w.utilization, w.resets_at, w.status])
    // Without RetryInfo: the ErrorInfo's Go-style quotaResetDelay (as Antigravity's refusals carry it), from now.
    expect(window(readCodeAssistRefusal(refusal(info('QUOTA_EXHAUSTED', { model: 'gemini-2.5-pro', quotaResetDelay: '1h2m3.5s' })), 'gemini-2.5-flash', T0))).toEqual([
      ['gemini-2.5-pro', 1, T0 + 3_723_500, 'rejected'],
    ])
    // Only a reset time stamp; and a `@type` key with a stray space, as gemini-cli meets it after SSE parsing.
    expect(window(readCodeAssistRefusal([refusal(info('QUOTA_EXHAUSTED', { model: 'gemini-2.5-pro', quotaResetTimeStamp: '2026-11-24T00:00:00Z' }, ' @type'))], '', T0))).toEqual([
      ['gemini-2.5-pro', 1, Date.parse('2026-11-24T00:00:00Z'), 'rejected'],
    ])
    // RetryInfo first; no model in the metadata: the one the call asked for.
    const r = readCodeAssistRefusal(refusal(info('QUOTA_EXHAUSTED', {}), { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '68940s' }), 'models/gemini-3-flash-preview', T0)
    expect(window(r)).toEqual([['gemini-3-flash-preview', 1, T0 + 68_940_000, 'rejected']])
    expect(r!.details).toEqual({ 'gemini-3-flash-preview-remaining': '0' })
    // What is not a used-up quota: a per-minute limit, the servers' capacity, a 429 that names no reason, no error.
    expect(readCodeAssistRefusal(refusal(info('RATE_LIMIT_EXCEEDED', { model: 'gemini-2.5-pro' }), { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.5s' }), 'gemini-2.5-pro', T0)).toBeNull()
    expect(readCodeAssistRefusal(refusal(info('MODEL_CAPACITY_EXHAUSTED', { model: 'gemini-2.5-pro' })), 'gemini-2.5-pro', T0)).toBeNull()
    expect(readCodeAssistRefusal({ error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } }, 'gemini-2.5-pro', T0)).toBeNull()
    expect(readCodeAssistRefusal(refusal(info('QUOTA_EXHAUSTED', {})), '', T0)).toBeNull()
    expect(readCodeAssistRefusal('Too Many Requests', 'gemini-2.5-pro', T0)).toBeNull()
  })
})

describe('PlanTracker', () => {
  const who = { provider: 'anthropic', account: 'h1', hint: 'sk-…abcd', billing: 'subscription' as const }
  const reading = (u: number, reset = T0 + 5 * 3600_000) => readAnthropicUnified({
    'anthropic-ratelimit-unified-5h-utilization': String(u),
    'anthropic-ratelimit-unified-5h-reset': sec(reset),
  })!

  it('projects when the window runs out at the current pace, or where it ends', () => {
    const t = new PlanTracker()
    t.observe(who, reading(0.2), T0)
    t.observe(who, reading(0.4), T0 + 3600_000) // +20% an hour: 100% at T0 + 4h, before the reset at +5h
    let w = t.list(T0 + 3600_000)[0].windows[0]
    expect(w.projected_exhausted_at).toBe(new Date(T0 + 4 * 3600_000).toISOString())
    expect(w.projected_at_reset).toBe(1)

    const slow = new PlanTracker()
    slow.observe(who, reading(0.2), T0)
    slow.observe(who, reading(0.25), T0 + 3600_000) // +5% an hour: 45% at the reset
    w = slow.list(T0 + 3600_000)[0].windows[0]
    expect(w.projected_exhausted_at).toBeNull()
    expect(w.projected_at_reset).toBeCloseTo(0.45, 10)

    // The calls stop at 40%: at T0 + 4.5h the run-out at T0 + 4h has passed with the window still
    // at 40%. The line runs on to now (20% in 4.5 h): 42.2% at the reset, no run-out before it.
    w = t.list(T0 + 4.5 * 3600_000)[0].windows[0]
    expect(w.utilization).toBe(0.4)
    expect(w.projected_exhausted_at).toBeNull()
    expect(w.projected_at_reset).toBeCloseTo(0.4 + 0.2 / 9, 10)
    // A short pause moves the run-out on: at T0 + 1.2h, 20% in 1.2 h, 100% at T0 + 1.2h + 3.6h.
    w = t.list(T0 + 1.2 * 3600_000)[0].windows[0]
    expect(Date.parse(w.projected_exhausted_at!)).toBeCloseTo(T0 + 4.8 * 3600_000, -1)
  })

  it('a reading true at an earlier time (a socket\'s upgrade answer) is placed there, and read after a newer one is older news', () => {
    const t = new PlanTracker()
    // Read with the socket's first call at T0 + 1h, true at its upgrade at T0: 20% -> 40% in an hour.
    t.observe(who, reading(0.2), T0 + 3600_000, T0)
    t.observe(who, reading(0.4), T0 + 3600_000)
    expect(t.list(T0 + 3600_000)[0].windows[0].projected_exhausted_at).toBe(new Date(T0 + 4 * 3600_000).toISOString())
    // Another socket's upgrade answer, true at T0 + 30 min, read now: the window keeps 40%.
    t.observe(who, reading(0.3), T0 + 3600_000 + 5, T0 + 1800_000)
    expect(t.list(T0 + 3600_000)[0].windows[0].utilization).toBe(0.4)
    // A reading as it comes is news even when the clock has gone back meanwhile.
    t.observe(who, reading(0.45), T0 + 1800_000)
    expect(t.list(T0 + 1800_000)[0].windows[0].utilization).toBe(0.45)
  })

  it('alerts at 80% and 95% once per window period', () => {
    const t = new PlanTracker()
    const seen: number[] = []
    t.onAlert((a) => seen.push(a.threshold))
    t.observe(who, reading(0.5), T0)
    t.observe(who, reading(0.82), T0 + 1)
    t.observe(who, reading(0.85), T0 + 2)
    t.observe(who, reading(0.96), T0 + 3)
    t.observe(who, reading(0.97), T0 + 4)
    expect(seen).toEqual([0.8, 0.95])
    // The next window period (read once this one has reset) alerts again.
    t.observe(who, reading(0.81, T0 + 10 * 3600_000), T0 + 5 * 3600_000 + 5)
    expect(seen).toEqual([0.8, 0.95, 0.8])
  })

  it('a Codex window read from reset-after-seconds alerts and notifies once per period, also after a restart', () => {
    // Codex's reset is now + the seconds the server says are left: it moves by ms with every call.
    const codex = { provider: 'chatgpt', account: 'acct', hint: 'acct…', billing: 'subscription' as const }
    const codexReading = (now: number, after: number) =>
      readCodex({ 'x-codex-primary-used-percent': '85', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-after-seconds': String(after) }, now)!
    const log = new PlanNoticeLog()
    const seen: number[] = []
    const watch = (t: PlanTracker, l: PlanNoticeLog) =>
      t.onAlert((a) => {
        if (l.claim(a, T0)) seen.push(a.threshold)
      })
    const t = new PlanTracker()
    watch(t, log)
    for (const [i, after] of [[0, 7200], [1, 7199], [2, 7197]] as const) t.observe(codex, codexReading(T0 + i * 1300, after), T0 + i * 1300)
    expect(seen).toEqual([0.8])
    // After a restart the tracker starts empty and its period starts at a later (drifted) reset; the remembered notice still holds.
    const restarted = new PlanTracker()
    watch(restarted, PlanNoticeLog.fromJSON(JSON.parse(JSON.stringify(log))))
    restarted.observe(codex, codexReading(T0 + 9000, 7190), T0 + 9000)
    expect(seen).toEqual([0.8])
    // The next period (its reset five hours later) notifies again.
    restarted.observe(codex, codexReading(T0 + 7_201_000, 18_000), T0 + 7_201_000)
    expect(seen).toEqual([0.8, 0.8])
  })

  it("a slow answer's reading of a period that has ended changes nothing: the window, its pace and its alerts stay the new period's", () => {
    const t = new PlanTracker()
    const seen: number[] = []
    t.onAlert((a) => seen.push(a.threshold))
    const oldReset = T0 + 60_000
    const newReset = T0 + 5 * 3600_000
    t.observe(who, reading(0.5, oldReset), T0)
    t.observe(who, reading(0.02, newReset), T0 + 120_000)
    // Admitted at 97% before the old period ended; its headers came after the new period's.
    t.observe(who, reading(0.97, oldReset), T0 + 125_000)
    expect(t.list(T0 + 130_000)[0].windows[0]).toMatchObject({ utilization: 0.02, resets_at: new Date(newReset).toISOString() })
    expect(seen).toEqual([])
  })

  it("alerts are the account's, whatever credential it was seen with first: a login's refreshed token is not told again after a restart", () => {
    const log = new PlanNoticeLog()
    const seen: string[] = []
    const before = new PlanTracker()
    before.onAlert((a) => log.claim(a, T0) && seen.push(a.account_hint))
    before.observe({ ...who, hint: 'sk-…1111' }, reading(0.85), T0)
    const after = new PlanTracker()
    const kept = PlanNoticeLog.fromJSON(JSON.parse(JSON.stringify(log)))
    after.onAlert((a) => kept.claim(a, T0) && seen.push(a.account_hint))
    after.observe({ ...who, hint: 'sk-…2222' }, reading(0.86), T0 + 1000)
    expect(seen).toEqual(['sk-…1111'])
  })

  it("a login token's readings filed before its account was known are the account's", () => {
    const t = new PlanTracker()
    t.observe({ ...who, account: 'uuid', hint: 'sk-…1111' }, reading(0.1), T0)
    t.observe({ ...who, account: 'token-2', hint: 'sk-…2222' }, reading(0.2), T0 + 1000)
    t.merge('anthropic', 'token-2', 'uuid')
    t.observe({ ...who, account: 'uuid', hint: 'sk-…2222' }, reading(0.3), T0 + 2000)
    expect(t.list(T0 + 2000).map((a) => [a.account_hint, a.windows[0].utilization])).toEqual([['sk-…1111', 0.3]])
    // An account seen first under the token moves to the account, with its windows.
    const first = new PlanTracker()
    first.observe({ ...who, account: 'token-3', hint: 'sk-…3333' }, reading(0.4), T0)
    first.merge('anthropic', 'token-3', 'uuid-3')
    first.observe({ ...who, account: 'uuid-3', hint: 'sk-…3333' }, reading(0.45), T0 + 1000)
    expect(first.list(T0 + 1000).map((a) => [a.account_hint, a.windows[0].utilization, a.windows[0].projected_at_reset !== null])).toEqual([['sk-…3333', 0.45, true]])
  })

  it("a login token's alerts wait for its account; one that never names it is told as its own after a while", () => {
    const t = new PlanTracker()
    const seen: string[] = []
    t.onAlert((a) => seen.push(`${a.account_hint} ${a.threshold}`))
    // Its account told 80% already; a second token's first reading (a token count) a second later.
    t.observe({ ...who, account: 'uuid', hint: 'sk-…1111' }, reading(0.85), T0)
    t.observe({ ...who, account: 'token-2', hint: 'sk-…2222', provisional: true }, reading(0.9, T0 + 5 * 3600_000 + 1000), T0 + 1000)
    t.merge('anthropic', 'token-2', 'uuid')
    expect(seen).toEqual(['sk-…1111 0.8'])
    // A token that never names an account (another OAuth client): its alert is told after PARK_MS, once.
    t.observe({ ...who, account: 'token-3', hint: 'sk-…3333', provisional: true }, reading(0.96), T0 + 2000)
    t.releaseParked(T0 + 2000 + PARK_MS - 1)
    expect(seen).toEqual(['sk-…1111 0.8'])
    t.releaseParked(T0 + 2000 + PARK_MS)
    expect(seen).toEqual(['sk-…1111 0.8', 'sk-…3333 0.8', 'sk-…3333 0.95'])
    t.observe({ ...who, account: 'token-3', hint: 'sk-…3333', provisional: true }, reading(0.97), T0 + 3000 + PARK_MS)
    t.releaseParked(T0 + 3000 + 2 * PARK_MS)
    expect(seen).toHaveLength(3)
    // One whose period ended before it was let go tells nothing of it.
    t.observe({ ...who, account: 'token-4', hint: 'sk-…4444', provisional: true }, reading(0.85, T0 + 30_000), T0)
    t.releaseParked(T0 + PARK_MS)
    expect(seen).toHaveLength(3)
    t.close()
  })

  it('a reset drifting by a second is the same period: no second alert', () => {
    const t = new PlanTracker()
    const seen: number[] = []
    t.onAlert((a) => seen.push(a.threshold))
    const reset = T0 + 3600_000
    for (const [i, r] of [[0, reset], [1, reset + 1000], [2, reset]] as const) t.observe(who, reading(0.85, r), T0 + i * 1000)
    expect(t.list(T0 + 3000)[0].windows[0].projected_at_reset).not.toBeNull() // one period: the pace keeps all three readings
    expect(seen).toEqual([0.8])
  })

  it('a window whose reset has passed with no reading since is a fresh period, not its old figures', () => {
    const t = new PlanTracker()
    const reset = T0 + 3600_000
    const full = readAnthropicUnified({
      'anthropic-ratelimit-unified-5h-utilization': '1',
      'anthropic-ratelimit-unified-5h-reset': sec(reset),
      'anthropic-ratelimit-unified-5h-status': 'rejected',
    })!
    t.observe(who, full, T0)
    expect(t.list(T0 + 1000)[0].windows[0]).toMatchObject({ utilization: 1, status: 'rejected', projected_exhausted_at: new Date(T0).toISOString() })
    // Three hours later the 5-hour window reset two hours ago; no call since.
    expect(t.list(T0 + 3 * 3600_000)[0].windows[0]).toEqual({
      name: '5h',
      utilization: 0,
      resets_at: new Date(reset).toISOString(),
      status: '',
      projected_exhausted_at: null,
      projected_at_reset: null,
      window_minutes: 300,
    })
  })

  it("a key's rate-limit windows read before the plan's are dropped when the plan's arrive", () => {
    const t = new PlanTracker()
    t.observe(who, readKeyLimits({ 'anthropic-ratelimit-tokens-limit': '1000', 'anthropic-ratelimit-tokens-remaining': '0', 'anthropic-ratelimit-tokens-reset': new Date(T0 + 60_000).toISOString() })!, T0)
    expect(t.list(T0)[0].windows.map((w) => w.name)).toEqual(['tokens'])
    t.observe(who, reading(0.2), T0 + 1000)
    expect(t.list(T0 + 2000)[0].windows.map((w) => w.name)).toEqual(['5h'])
  })
})
