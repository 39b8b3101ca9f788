import { createHash, randomUUID } from 'node:crypto'
import type { ThresholdEvent } from '../budgets/announcer'
import { crossingKey } from '../budgets/levels'
import { forecast } from '../budgets/forecast'
import { shownPattern } from '../budgets/pattern'
import type { RunawayEvent } from '../budgets/runaway'
import { formatPct, formatUsdFull, formatUsdPair } from '../../shared/format'
import { budgetShare } from '../../shared/reached'

/** The JSON body of a budget alert (README: Alerts). */
export interface AlertPayload {
  type: 'budget.threshold' | 'test'
  id: string
  created_at: string
  rule: { api_key_pattern: string; source: string; action: string }
  api_key_hash: string
  key_hint: string
  window: { period: string; window_hours: number | null; resets_at: string | null }
  threshold_pct: number
  spent_usd: number
  limit_usd: number
  pct: number
  forecast: { projected_usd: number; exhausted_at: string | null; burn_rate_usd_per_hour: number }
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString())

/**
 * A threshold alert's `id`: a calendar period's the same for its crossing wherever and whenever it
 * is made (shaped as a UUID, from the announcer's key for it: rule, key, period, limit, threshold),
 * so a JSON receiver can tell the one sent again as the one it has. On PostgreSQL a claim let go at
 * shutdown is sent by the next instance to read the crossing back, and the attempt before may have
 * reached the webhook (answered too late); it went with a new id. A rolling window's, which
 * crosses a threshold again as its spend falls and rises, has a new one each time.
 */
export function thresholdAlertId(e: ThresholdEvent): string {
  if (e.state.period === 'window') return `alert_${randomUUID()}`
  const h = createHash('sha256').update(`alert id\n${crossingKey(e.rule, e.key.hash, e.state, e.pct)}`).digest('hex')
  return `alert_${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`
}

export function thresholdPayload(e: ThresholdEvent, id: string, now: number): AlertPayload {
  const p = e.state
  const f = forecast(p, now)
  // A rule on a whole key names the key: a webhook gets only its hint.
  const pattern = shownPattern(e.rule.api_key_pattern)
  return {
    type: 'budget.threshold',
    id,
    created_at: iso(now)!,
    rule: { api_key_pattern: pattern, source: e.rule.source, action: e.rule.action },
    api_key_hash: e.key.hash,
    key_hint: e.key.hint,
    window: { period: p.period, window_hours: p.period === 'window' ? e.rule.window_hours : null, resets_at: iso(p.resetsAt) },
    threshold_pct: e.pct,
    spent_usd: p.spent,
    limit_usd: p.limit,
    // As the dashboard's `pct`: at least 1 once the limit counts as reached (ten $0.10 calls of $1.00).
    pct: budgetShare(p.spent, p.limit),
    forecast: { projected_usd: f.projected, exhausted_at: iso(f.exhaustedAt), burn_rate_usd_per_hour: f.rate * 3600_000 },
  }
}

export function testPayload(id: string, now: number): AlertPayload {
  return {
    type: 'test',
    id,
    created_at: iso(now)!,
    rule: { api_key_pattern: 'sk-test-*', source: 'config', action: 'warn' },
    api_key_hash: '0'.repeat(64),
    key_hint: 'sk-…test',
    window: { period: 'daily', window_hours: null, resets_at: iso(now + 86_400_000) },
    threshold_pct: 0.5,
    spent_usd: 2.5,
    limit_usd: 5,
    pct: 0.5,
    forecast: { projected_usd: 5, exhausted_at: null, burn_rate_usd_per_hour: 0.1 },
  }
}

/** A runaway agent: a loop or a session's spend rate (README: Runaway agents). */
export interface RunawayPayload {
  type: 'runaway.loop' | 'runaway.spend_rate'
  id: string
  created_at: string
  action: 'warn' | 'block'
  session: string
  agent: string
  model: string
  api_key_hash: string
  key_hint: string
  repeats: number
  usd_last_minute: number
}

export type OutboundAlert = AlertPayload | RunawayPayload

export function runawayPayload(e: RunawayEvent, id: string): RunawayPayload {
  return {
    type: e.kind === 'loop' ? 'runaway.loop' : 'runaway.spend_rate',
    id,
    created_at: iso(e.at)!,
    action: e.action,
    session: e.session,
    agent: e.agent,
    model: e.model,
    api_key_hash: e.api_key_hash,
    key_hint: e.key_hint,
    repeats: e.count,
    usd_last_minute: e.usd_last_minute,
  }
}

/** Money as the dashboard and the CLI show it: cents, or two significant digits under a cent (a small budget's $0.0012 is not $0.00). */
const money = formatUsdFull

/**
 * A value in Slack's text as itself: `&`, `<` and `>` escaped, as Slack asks. A session, agent or
 * model is whatever the caller sent, and `<!channel>` or `<https://…|label>` in it would ping the
 * whole channel or show a disguised link in a message from Burnrate.
 */
const slackText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Slack's incoming-webhook body: one line of text. */
export function slackBody(a: OutboundAlert): { text: string } {
  if ('session' in a) {
    const what = a.type === 'runaway.loop' ? `sent the same ${slackText(a.model)} conversation tail ${a.repeats} times` : `spent ${money(a.usd_last_minute)} in the last minute`
    return {
      text: `Runaway agent: session ${slackText(a.session)} (${slackText(a.agent || 'unknown agent')}, ${slackText(a.key_hint)}) ${what}; ${a.action === 'block' ? 'its calls are refused' : 'warned'}.`,
    }
  }
  const p = a as AlertPayload
  const period = p.window.period === 'window' ? `${p.window.window_hours}-hour window` : `${p.window.period} limit`
  const head = p.type === 'test' ? 'Burnrate test alert: ' : ''
  // As the dashboard shows them: a spend and a limit that differ never read the same, nor a share under the whole as 100%.
  const [spent, limit] = formatUsdPair(p.spent_usd, p.limit_usd)
  const pace = p.forecast.exhausted_at ? `; at this pace the limit is reached at ${p.forecast.exhausted_at}` : ''
  return {
    text:
      `${head}${slackText(p.key_hint || 'A key')} has spent ${spent} of its ${limit} ${period} ` +
      `(${formatPct(p.pct)}, alert at ${formatPct(p.threshold_pct)}) under budget rule ${slackText(p.rule.api_key_pattern)}` +
      `; projected ${money(p.forecast.projected_usd)}${pace}.`,
  }
}
