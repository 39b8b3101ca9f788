import type { BudgetsOverview, BudgetStatus, BudgetWindow } from '../../shared/api'
import { ruleJson } from '../admin/rule-json'
import type { BudgetEngine } from '../budgets/engine'
import { forecast } from '../budgets/forecast'
import { Meter, type PeriodState } from '../budgets/meter'
import { isPrefix, matches } from '../budgets/pattern'
import { budgetShare } from '../budgets/reached'
import type { Spend, SpendTracker } from '../ledger/spend'
import { keyHint } from '../../shared/key-hint'
import type { SqlReader } from '../storage/sql'
import { TIERS } from './rollup/schema'
import { MONEY, total } from './sql'
import type { UnpricedSpan } from './budget-unpriced'
import { AFTER_ALL, splitTiers, type Window } from './window'

const HOUR = 3600_000
/** A rule's session window shows the key's sessions with a call this recently (the sessions panel's "last 24 h"). */
const SESSION_RECENT_MS = 24 * HOUR

/**
 * A rule's `session_limit_usd` as a window: the key's session of the last 24 hours nearest that
 * limit (each session has its own), never reset (`resets_at: null`, as in a refusal) and not
 * forecast (its spend is its projection).
 */
function sessionWindow(limit: number, meter: Meter, now: number, hash: string | null, spans?: UnpricedSpan[]): BudgetWindow {
  const s = meter.fullestSession(now - SESSION_RECENT_MS)
  const spent = s?.spent ?? 0
  const share = budgetShare(spent, limit)
  const out: BudgetWindow = {
    period: 'session',
    limit_usd: limit,
    spent_usd: spent,
    pct: share,
    projected_usd: spent,
    exhausted_at: share >= 1 ? new Date(now).toISOString() : null,
    resets_at: null,
    burn_rate_usd_per_hour: 0,
    session: s?.session ?? null,
    unpriced_requests: 0,
  }
  if (spans && hash !== null && s) spans.push({ kind: 'session', rule: meter.rule, hash, session: s.session, window: out })
  // No session of the key spent money under the rule (the meter holds only those): one of only
  // calls of no known price is shown, at $0, once they are read (./budget-unpriced.ts).
  else if (spans && hash !== null) spans.push({ kind: 'unpriced-session', rule: meter.rule, hash, since: now - SESSION_RECENT_MS, window: out })
  return out
}

/**
 * Every money limit of `rule` for one key (`hash`; null for a rule no key has used yet): its
 * calendar and rolling windows, then its session's; each window whose unpriced calls are to be
 * counted (those of a key) is added to `spans` (./budget-unpriced.ts).
 */
function windowsOf(meter: Meter, now: number, hash: string | null, spans?: UnpricedSpan[]): BudgetWindow[] {
  const out = meter.periods(now).map((p) => {
    const w = windowOf(p, now)
    // A calendar period up to its end (a call stamped ahead is its period's), a rolling window up to now and after.
    if (spans && hash !== null) spans.push({ kind: 'rule', rule: meter.rule, hash, start: p.start, end: p.period === 'window' ? AFTER_ALL : (p.resetsAt ?? AFTER_ALL), window: w })
    return w
  })
  const limit = meter.rule.session_limit_usd
  if (limit !== null) out.push(sessionWindow(limit, meter, now, hash, spans))
  return out
}

function windowOf(p: PeriodState, now: number): BudgetWindow {
  const f = forecast(p, now)
  return {
    period: p.period as BudgetWindow['period'],
    limit_usd: p.limit,
    spent_usd: p.spent,
    // At least 1 once the limit counts as reached (within the budgets' float drift), as the proxy judges it.
    pct: budgetShare(p.spent, p.limit),
    projected_usd: f.projected,
    exhausted_at: f.exhaustedAt === null ? null : new Date(f.exhaustedAt).toISOString(),
    resets_at: new Date(p.resetsAt ?? now).toISOString(),
    burn_rate_usd_per_hour: f.rate * HOUR,
    unpriced_requests: 0,
  }
}

type Status = ReturnType<BudgetEngine['status']>

function momentOf(status: Status, spend: SpendTracker, now: number): number {
  let at = spend.totalsAt(now)
  for (const { keys } of status) for (const { meter } of keys) at = Math.max(at, meter.readAt(now))
  return at
}

/**
 * The moment one budgets answer read at `now` describes, which all its figures are read at:
 * `now`, or the start of the latest day the day's spend or any key's meters have already rolled
 * into (a call while the answer awaited a team server's ingested spend, a clock stepped back
 * across midnight). Read at `now`, a key whose meter had not rolled yet would show the ended day
 * (blocked until a midnight already gone, where the proxy decides its next call in the new day)
 * beside another key's and `overall`'s new one.
 */
export function answerMoment(engine: BudgetEngine, spend: SpendTracker, now: number): number {
  return momentOf(engine.status(), spend, now)
}

/**
 * `GET /api/dashboard/budgets`: every rule in force, per API key it applies to, with each window's
 * forecast, all read at one moment (answerMoment). `ingested`: a team server's members' spend today
 * and this month (ingestedSpend) in that moment's day and month, which `overall` adds to the
 * in-memory spend (budgets are not run on those calls, so it has none of them).
 */
export function budgetsOverview(
  engine: BudgetEngine, spend: SpendTracker, tenant: string | null, when: number, ingested?: Spend, spans?: UnpricedSpan[],
): BudgetsOverview {
  const overrides = new Set(engine.rules.runtime.map((r) => r.api_key_pattern))
  const rules: BudgetStatus[] = []
  const status = engine.status()
  const now = momentOf(status, spend, when)
  for (const { rule, keys } of status) {
    const json = ruleJson(rule, rule.source === 'config' && overrides.has(rule.api_key_pattern))
    // A rule on a whole key names the key; the dashboard (unlike the admin API) shows only its hint.
    if (!isPrefix(json.api_key_pattern)) json.api_key_pattern = keyHint(json.api_key_pattern)
    // A tenant's view: the keys whose last call was the tenant's; under a rule scoped to tenants,
    // every key it counted when it decides the tenant's calls (and none when it does not), whatever
    // tenant a key's last call was: the rule counts and refuses only its tenants' calls.
    const shown = tenant === null ? keys : keys.filter((k) => (rule.tenant !== null ? matches(rule.tenant, tenant) : k.key.tenant === tenant))
    if (shown.length === 0) {
      // A rule no key has used yet: its windows, at $0.
      rules.push({ rule: json, api_key_hash: null, key_hint: null, windows: windowsOf(new Meter(rule, engine.clock), now, null) })
      continue
    }
    for (const { key, meter } of shown) {
      rules.push({ rule: json, api_key_hash: key.hash, key_hint: key.hint, windows: windowsOf(meter, now, key.hash, spans) })
    }
  }
  rules.sort(
    (a, b) =>
      Math.max(0, ...b.windows.map((w) => w.pct)) - Math.max(0, ...a.windows.map((w) => w.pct)) ||
      a.rule.api_key_pattern.localeCompare(b.rule.api_key_pattern) ||
      (a.api_key_hash ?? '').localeCompare(b.api_key_hash ?? ''),
  )
  const overall: BudgetsOverview['overall'] = []
  if (tenant === null) {
    // The totals are counted in the ledger's day and month (the config's `timezone`), which the
    // budget clock (shared on PostgreSQL: another zone, possibly) need not be: the reset and the
    // pace come from the same clock as the spend, so the three describe one day.
    // Their day and month are those the totals are of: `now` is the answer's moment, at or after
    // the start of the day the totals have rolled into (a reset at the end of an earlier day would
    // be a time already gone).
    const own = spend.totals(now)
    const at = spend.totalsAt(now)
    const totals = { day: own.day + (ingested?.day ?? 0), month: own.month + (ingested?.month ?? 0) }
    const day = spend.clock.dayOf(at)
    const month = spend.clock.monthOf(at)
    for (const [period, spent, p] of [['daily', totals.day, day], ['monthly', totals.month, month]] as const) {
      const f = forecast({ period, limit: Infinity, spent, start: p.start, resetsAt: p.end }, at)
      const o = { period, spent_usd: spent, projected_usd: f.projected, resets_at: new Date(p.end).toISOString(), burn_rate_usd_per_hour: f.rate * HOUR, unpriced_requests: 0 }
      overall.push(o)
      spans?.push({ kind: 'all', start: p.start, end: p.end, window: o })
    }
  }
  return { rules, overall }
}

/**
 * Today's and this month's money of the calls a team server's members sent (`member` set; the
 * server's own calls have none), in the spend's day and month: whole hours and days from the
 * member rollups, the edges from `calls`. Every dashboard total holds them; the in-memory spend does not.
 */
export async function ingestedSpend(q: SqlReader, spend: SpendTracker, now: number): Promise<Spend> {
  const money = async (w: Window): Promise<number> => {
    let usd = 0
    const { rolled, raw } = splitTiers(w, TIERS)
    for (const { tier, window } of rolled) {
      const sql = `SELECT ${total('cost_usd')} AS usd FROM ${tier.dims} WHERE dim = 'member' AND key <> '' AND bucket >= @start AND bucket < @end`
      usd += (await q.get<{ usd: number }>(sql, { start: window.start, end: window.end }))!.usd
    }
    for (const r of raw) {
      const sql = `SELECT ${total(MONEY)} AS usd FROM calls WHERE ts >= @start AND ts < @end AND member <> ''`
      usd += (await q.get<{ usd: number }>(sql, { start: r.start, end: r.end }))!.usd
    }
    return usd
  }
  // The whole day and month, as the summary counts them: a member's call stamped later today (its clock running fast) is today's.
  const day = spend.clock.dayOf(now)
  const month = spend.clock.monthOf(now)
  return { day: await money({ start: day.start, end: day.end }), month: await money({ start: month.start, end: month.end }) }
}
