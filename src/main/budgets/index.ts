import { ConfigError } from '../config/load'
import { emptyUsage } from '../metering/usage'
import type { CallRecord } from '../ledger/record'
import type { Pricer } from '../pricing/price'
import type { Feature, ServerContext } from '../server/context'
import { PeriodClock } from '../time/zone'
import { checkRule } from './check'
import { budgetClockOf } from './clock'
import { BudgetEngine, type CostModel, type HistoryRow, historyStart } from './engine'
import { CallHistory, expectedUsd } from './expected'
import { budgetGate, sharedBudgetGate } from './gate'
import type { Rule } from './rules'
import type { CostAdjustment } from './types'
import { RunawayDetector } from './runaway'
import { SharedHistory } from './shared-history'
import { SharedCallFeed } from './feed/listen'
import { type FeedRow, feedIdOf, shareKnownPatterns } from './feed/publish'
import type { Snapshot } from './feed/snapshot'
import { PostgresStore } from '../storage/postgres'
import { type NoticeReader, readWithNotices } from '../ledger/notices'
import { shareBudgetClock } from './shared-clock'
import { PgRuleStore } from './shared-rules'
import { firstLoad } from '../storage/shared-table'
import { PgBudgetState } from './state/postgres'
import { RuleStore, type RuleWriter } from './store'
import { worstCaseUsd } from './worst-case'

export interface Budgets {
  engine: BudgetEngine
  /** Runtime rules: SQLite's `budget_rules` (one instance), or PostgreSQL's shared by all (`storage.url`). */
  store: RuleWriter
  runaway: RunawayDetector
  /** What answered calls produced, per provider and requested model (expected-cost reservations). */
  history: CallHistory
  /** PostgreSQL mode: other instances' calls as they are stored (null on SQLite). */
  feed: SharedCallFeed | null
}

const installed = new WeakMap<ServerContext, Budgets>()

function configRules(ctx: ServerContext): Rule[] {
  const seen = new Map<string, number>()
  return ctx.config.budgets.rules.map((r, i) => {
    const first = seen.get(r.api_key_pattern)
    if (first !== undefined) {
      throw new ConfigError(
        `budgets.rules[${i}].api_key_pattern: "${r.api_key_pattern}" is already the pattern of budgets.rules[${first}]; a pattern can have one rule`,
      )
    }
    seen.set(r.api_key_pattern, i)
    // The same checks as the admin API (limits present, a window with its hours, ...).
    const checked = checkRule(r)
    if (!checked.ok) {
      throw new ConfigError(`budgets.rules[${i}]${checked.param ? `.${checked.param}` : ''}: ${checked.message}`)
    }
    return { ...checked.rule, source: 'config', created_at: null }
  })
}

function costModel(pricer: Pricer, history: CallHistory): CostModel {
  return {
    worstCase: (ctx) => worstCaseUsd(pricer, ctx),
    expected: (ctx) => expectedUsd(pricer, history, ctx),
    learn: (ctx, call) => {
      if (!ctx.shape.model) return
      // What the prompt cost as billed (cache reads and writes at their own rates), per body byte.
      let perByte: number | null = null
      if (ctx.bodyBytes > 0 && call.priced) {
        const u = emptyUsage()
        u.input_tokens = call.input_tokens
        u.cache_read_tokens = call.cache_read_tokens
        u.cache_write_tokens = call.cache_write_tokens
        u.cache_write_1h_tokens = call.cache_write_1h_tokens
        const p = pricer.price(ctx.provider.pricingId, ctx.provider.name, call.model, u, new Date(call.ts))
        if (p.priced) perByte = p.cost_usd / ctx.bodyBytes
      }
      history.learn(ctx.provider.name, ctx.shape.model, call.output_tokens, perByte)
    },
  }
}

/** The budget engine and rule store of a server, created (and installed as its gate) on first use. */
export function budgetsOf(ctx: ServerContext): Budgets {
  const existing = installed.get(ctx)
  if (existing) return existing
  const pricer = ctx.pricer
  const history = new CallHistory()
  const historyQuery = ctx.db.prepare(
    `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
            (ts / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, SUM(input_tokens + output_tokens) AS tokens, MAX(ts) AS last
       FROM calls WHERE ts >= ? AND origin_id IS NULL GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session, t`,
  )
  // PostgreSQL (`storage.url`): rules and block-rule spend shared by every instance on the database.
  const shared = ctx.store.dialect === 'postgres'
  const sharedHistory = shared ? new SharedHistory(ctx.store, ctx.ledger) : null
  let engine: BudgetEngine | null = null
  // SQLite: calls `burnrate import` stores beside this server, counted as they are noticed, each
  // only when the meters' last read of the ledger did not already hold it (../ledger/notices.ts).
  const noticed: NoticeReader = {
    through: 0,
    take: (calls) => {
      for (const c of calls) engine?.observe(c)
    },
  }
  const loadHistory = (since: number): HistoryRow[] => {
    if (sharedHistory) return sharedHistory.rows
    try {
      // Calls still held in memory are written first, so none is missed (or counted twice).
      ctx.ledger.flush()
    } catch {
      // a database that cannot be written now: the held calls are counted when they arrive
    }
    const { value, through } = readWithNotices(ctx.db, () => historyQuery.all(since) as HistoryRow[])
    noticed.through = through
    return value
  }
  /** A read of the meters' calls failed, and none has succeeded since. */
  let readFailing = false
  /** This instance's calls recorded during each reload under way. */
  const duringReload = new Set<CallRecord[]>()
  // The meters again from every instance's calls (PG mode), once the rows are read; the snapshot
  // they were read in tells the feed which other instances' calls they already hold.
  const loadShared = async (): Promise<Snapshot | null> => {
    if (!sharedHistory || !engine) return null
    const en = engine
    // This instance's calls counted while the rows are read: those the read missed (stored after its
    // snapshot, or not yet) are counted again once the meters are rebuilt from it, the others not.
    const during: CallRecord[] = []
    duringReload.add(during)
    try {
      const now = Date.now()
      const { snapshot, read, spend, keys } = await sharedHistory.load(historyStart(en.rules.active(), en.clock, now), () => during, en.clock.monthOf(now).start)
      en.reload()
      // Today's spend and the key registry too (tray, `burnrate_spend_usd`, key listings): every instance's, from the same snapshot.
      ctx.ledger.spend.replace(spend)
      const missed = during.filter((c) => !(c.call_key && read.has(c.call_key)))
      if (keys) en.reseed(keys, missed)
      en.recount(missed)
      for (const c of missed) if (c.billing !== 'subscription') ctx.ledger.spend.add(c.api_key_hash, c.ts, c.cost_usd)
      if (readFailing) ctx.log.info('budgets: the calls the meters count are read from PostgreSQL again')
      readFailing = false
      return snapshot
    } catch (err) {
      // PostgreSQL away: the meters keep what they have; the feed reads again (logged once until it can)
      if (!readFailing) ctx.log.warn(`budgets: could not read the calls the meters count from PostgreSQL (${err instanceof Error ? err.message : String(err)}); trying again`)
      readFailing = true
      return null
    } finally {
      duringReload.delete(during)
    }
  }
  // PG mode: other instances' calls reach the meters as they are stored (./feed/).
  let feed: SharedCallFeed | null = null
  const reloadShared = (): Promise<void> => (feed ? feed.reload() : loadShared().then(() => {}))
  const local = new RuleStore(ctx.db, (rules) => engine?.setRuntimeRules(rules))
  // PG mode: the data folder's `budget_rules` keeps the last rules read from PostgreSQL, so an
  // instance starting while the database is away enforces them (start-up never waits on it).
  const pgRules = shared
    ? new PgRuleStore(ctx.store, (rules) => {
        engine?.setRuntimeRules(rules)
        void reloadShared()
        try {
          local.replaceAll(rules)
        } catch {
          // the copy is a convenience; the rules in force are the ones just read
        }
      })
    : null
  const store: RuleWriter = pgRules ?? local
  const state = shared ? new PgBudgetState(ctx.store) : undefined
  // One clock for the meters, the spend rows and re-pricing (./clock.ts); on PostgreSQL, the database's.
  const clock = budgetClockOf(ctx.config)
  engine = new BudgetEngine(
    clock,
    clock.weekStart,
    configRules(ctx),
    local.all(),
    costModel(pricer, history),
    loadHistory,
    state,
  )
  engine.reload()
  const month = new PeriodClock(ctx.config.timezone).monthOf(Date.now()).start
  engine.seed(
    ctx.db
      .prepare(
        `SELECT api_key_hash, key_hint, tenant, COUNT(*) AS requests, MAX(ts) AS last_ts
           FROM calls WHERE ts >= ? AND origin_id IS NULL GROUP BY api_key_hash`,
      )
      .all(month) as { api_key_hash: string; key_hint: string; tenant: string; requests: number; last_ts: number }[],
  )
  const e = engine
  const r = ctx.config.runaway
  const runaway = new RunawayDetector({
    loop: { action: r.loop.action, repeats: r.loop.repeats, windowMinutes: r.loop.window_minutes },
    spendRate: { action: r.spend_rate.action, usdPerMinute: r.spend_rate.usd_per_minute },
  })
  if (ctx.notices && !shared) ctx.onClose(ctx.notices.read(noticed))
  const stop = ctx.ledger.onCall((call) => {
    e.observe(call)
    runaway.observe(call)
    for (const during of duringReload) during.push(call)
  })
  ctx.onClose(stop)
  const guard = { detector: runaway, windowMinutes: r.loop.window_minutes, usdPerMinute: r.spend_rate.usd_per_minute }
  if (pgRules && state) {
    let closed = false
    void firstLoad(pgRules, () => closed)
    // The meters again in the new periods when another instance moved the clock.
    const shared = shareBudgetClock(ctx.store, ctx.config, clock, ctx.log, () => void reloadShared())
    ctx.onClose(() => shared.close())
    // Other instances' calls as they are stored; it reads the meters once it listens.
    const countShared = (rows: readonly FeedRow[]): void => {
      e.observeShared(rows)
      for (const r of rows) ctx.ledger.spend.add(r[0], r[8], r[9])
    }
    const moveShared = (moves: readonly CostAdjustment[]): void => {
      e.adjust(moves)
      for (const m of moves) ctx.ledger.spend.adjust(m.api_key_hash, m.ts, m.delta)
    }
    if (ctx.store instanceof PostgresStore) {
      feed = new SharedCallFeed(ctx.store, feedIdOf(ctx.store), { rows: countShared, moves: moveShared, reload: loadShared }, ctx.log)
      shareKnownPatterns(ctx.store, (hash) => e.knownPatterns(hash))
      feed.start()
      const f = feed
      ctx.healthSections.calls_feed = () => f.status()
      ctx.onClose(() => f.close())
    }
    // The key registry and the meters from every instance's calls (start-up never waits on it).
    void reloadShared().catch(() => {})
    ctx.setGate(sharedBudgetGate(e, guard))
    ctx.onClose(async () => {
      closed = true
      pgRules.close()
      await state.close()
    })
  } else {
    ctx.setGate(budgetGate(e, guard))
  }
  ctx.budgets = e
  const b = { engine: e, store, runaway, history, feed }
  installed.set(ctx, b)
  return b
}

/** Budget rules from the config and the database, enforced on every proxied call. */
export const budgets: Feature = (ctx) => {
  budgetsOf(ctx)
}
