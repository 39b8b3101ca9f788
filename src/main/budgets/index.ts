import { ConfigError } from '../config/load'
import { emptyUsage } from '../metering/usage'
import type { Pricer } from '../pricing/price'
import type { CallContext } from '../proxy/gate'
import { ensurePostgresSchema } from '../storage/postgres-migrations'
import type { Feature, ServerContext } from '../server/context'
import { chargesBeyondTokens, ownTokens } from './call-fees'
import { checkRule } from './check'
import { budgetClockOf } from './clock'
import { SqliteAnnounced } from './announced'
import { HoldFile } from './background-holds'
import { watchHeldPeriods } from './held-check'
import { BudgetEngine, type CostModel } from './engine'
import { ConversationMemory } from './conversations'
import { CallHistory, continuesStored, expectedUsd, isBackground } from './expected'
import { KeyPatternStore } from './key-patterns'
import type { KeyCount } from './key-registry'
import type { SharedCallFeed } from './feed/listen'
import { budgetGate, sharedBudgetGate } from './gate'
import { LocalHistory } from './local-history'
import type { Rule } from './rules'
import { RunawayDetector } from './runaway'
import { SharedBudgets } from './shared'
import { KEYS_SQL, keysParams } from './shared-history'
import { RuleStore, type RuleWriter } from './store'
import { toolKind } from './tool-kinds'
import { worstCaseUsd } from './worst-case'
import { keepUnwritten } from './unwritten-rows'

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

/** The config's rules as the engine takes them (a pattern given twice is refused when the file loads: ../config/load.ts). */
function configRules(ctx: ServerContext): Rule[] {
  return ctx.config.budgets.rules.map((r, i) => {
    // The same checks as the admin API (limits present, a window with its hours, ...).
    const checked = checkRule(r)
    if (!checked.ok) {
      throw new ConfigError(`budgets.rules[${i}]${checked.param ? `.${checked.param}` : ''}: ${checked.message}`)
    }
    return { ...checked.rule, source: 'config', created_at: null }
  })
}

/** The calls looked at for `seedAnswered`: the latest, by id (the primary key: no scan). */
const ANSWERED_SEED_CALLS = 20_000

const ANSWERED_SQL = 'SELECT provider, requested_model, model, priced FROM calls WHERE id > @from AND requested_model IS NOT NULL ORDER BY id'
type AnsweredRow = { provider: string; requested_model: string; model: string; priced: number | boolean }

/** SQLite: read before the first call is decided (a few ms); PostgreSQL: as soon as it answers. */
async function seedAnswered(ctx: ServerContext, history: CallHistory): Promise<void> {
  const note = (rows: AnsweredRow[]) => {
    for (const r of rows) if (r.priced) history.noteAnswered(r.provider, r.requested_model, r.model)
  }
  if (ctx.store.dialect !== 'postgres') {
    const max = (ctx.db.prepare('SELECT max(id) AS m FROM calls').get() as { m: number | null }).m ?? 0
    note(ctx.db.prepare(ANSWERED_SQL).all({ from: max - ANSWERED_SEED_CALLS }) as AnsweredRow[])
    return
  }
  await ensurePostgresSchema(ctx.store)
  const max = (await ctx.store.get<{ m: number | null }>('SELECT max(id) AS m FROM calls'))?.m ?? 0
  note(await ctx.store.all<AnsweredRow>(ANSWERED_SQL, { from: Number(max) - ANSWERED_SEED_CALLS }))
}

function costModel(pricer: Pricer, history: CallHistory): CostModel {
  // A call leaving its tier to a project whose default is Fast mode is reserved as one asking for
  // it: the answer names that tier, and the call is recorded at the model's fast price.
  const tiered = (ctx: CallContext): CallContext => (history.servedFast(ctx) ? { ...ctx, shape: { ...ctx.shape, fast: true } } : ctx)
  // The conversations behind recent Responses answers (./conversations.ts): a turn that continues
  // one reserves it too. One lookup per Responses call naming a previous response.
  const conversations = new ConversationMemory()
  const continued = (ctx: CallContext): number => (ctx.shape.endpoint === 'responses' ? conversations.find(ctx.body) : -1)
  return {
    worstCase: (ctx) => worstCaseUsd(pricer, tiered(ctx), history.answeredAs, conversations.carriedTokens(continued(ctx))),
    answeredAs: history.answeredAs,
    expected: (ctx) => {
      const slot = continued(ctx)
      return expectedUsd(pricer, history, tiered(ctx), conversations.carriedTokens(slot), conversations.carriedCached(slot))
    },
    answered: (call, ctx) => {
      if (call.endpoint !== 'responses' || !call.response_id) return
      // A cut turn's prompt counts are its body's: the conversation it continued rides on with it.
      const slot = call.prompt_of_body && ctx ? continued(ctx) : -1
      conversations.remember(call.response_id, call, conversations.carriedTokens(slot), conversations.carriedCached(slot))
    },
    learn: (ctx, call) => {
      if (!ctx.shape.model) return
      // Only a call that left its tier to the project says what the project's default is.
      if (ctx.shape.projectTier && !ctx.shape.fast) history.noteTier(ctx.provider.name, ctx.shape.model, ctx.apiKeyHash, call.usage_extra?.includes('"fast":true') === true)
      // The call's own model's tokens: what another model ran in it (the advisor's) is a charge beyond them.
      const own = ownTokens(call)
      // What the prompt cost as billed (cache reads and writes at their own rates), per body byte.
      let perByte: number | null = null
      if (ctx.bodyBytes > 0 && call.priced && !continuesStored(ctx.body)) {
        const u = emptyUsage()
        u.input_tokens = own.input_tokens
        u.cache_read_tokens = own.cache_read_tokens
        u.cache_write_tokens = own.cache_write_tokens
        u.cache_write_1h_tokens = own.cache_write_1h_tokens
        const p = pricer.price(ctx.provider.pricingId, ctx.provider.name, call.model, u, new Date(call.ts))
        if (p.priced) perByte = p.cost_usd / ctx.bodyBytes
      }
      // A requested name with no price of its own (an Azure deployment's) is reserved at the
      // price of the model its answer named (worst-case.ts).
      // A background response's usage is learnt apart (./expected.ts).
      // What it was charged beyond its tokens (searches, images, grounding its answer named, the advice).
      const fees = chargesBeyondTokens(pricer, ctx.provider.pricingId, ctx.provider.name, call)
      history.learn(ctx.provider.name, ctx.shape.model, own.output_tokens, perByte, fees, call.priced ? call.model : undefined, isBackground(ctx), fees === null ? 'none' : toolKind(ctx.body))
    },
  }
}

/** The budget engine and rule store of a server, created (and installed as its gate) on first use. */
export function budgetsOf(ctx: ServerContext): Budgets {
  const existing = installed.get(ctx)
  if (existing) return existing
  const history = new CallHistory()
  let engine: BudgetEngine | null = null
  const local = new RuleStore(ctx.db, (rules) => engine?.setRuntimeRules(rules))
  // PostgreSQL (`storage.url`): rules, block-rule spend, the clock and the meters' calls shared by
  // every instance on the database (./shared.ts); SQLite: this server's file (./local-history.ts).
  const shared = ctx.store.dialect === 'postgres' ? new SharedBudgets(ctx, local, history) : null
  // Which model each requested name was last answered as, from the calls stored before this start
  // (a restart, another instance's): on SQLite read here, on PostgreSQL as soon as it answers.
  seedAnswered(ctx, history).catch((err: Error) => ctx.log.warn(`budgets: could not read which models requested names were answered as: ${err.message}`))
  const own = shared ? null : new LocalHistory(ctx.db, ctx.ledger, () => engine)
  // One clock for the meters, the spend rows and re-pricing (./clock.ts); on PostgreSQL, the database's.
  const clock = budgetClockOf(ctx.config)
  engine = new BudgetEngine(
    clock,
    clock.weekStart,
    configRules(ctx),
    local.all(),
    costModel(ctx.pricer, history),
    (since, sessionsSince) => (shared ? shared.rows() : own!.load(since, sessionsSince)),
    shared?.state,
  )
  engine.reload()
  // Thresholds announced before this start, in periods not yet ended: not announced again.
  // (PostgreSQL: read with the meters, ./shared.ts.)
  if (shared) engine.keepAnnounced(shared.announced)
  else {
    const announced = new SqliteAnnounced(ctx.db, ctx.ledger)
    engine.keepAnnounced(announced)
    engine.rememberAnnounced(announced.load(Date.now()))
  }
  // Background responses still running before this start hold their reservations again.
  const holdFile = new HoldFile(ctx.db, ctx.ledger)
  engine.holds.file = holdFile
  void engine.rehold()
  // The key registry from this file's calls (PostgreSQL: from every instance's, once ./shared.ts has read them),
  // counted in the month they are read for: one ended meanwhile is not the next one's.
  // (SQLite: with a rule, read with the meters above; without, here: either way in one read with
  // the notices it moves past, ./local-history.ts.)
  const seededAt = Date.now()
  if (own) {
    if (!own.keysRead) own.seedKeys(engine, seededAt)
  } else engine.seed(ctx.db.prepare(KEYS_SQL).all(keysParams(engine.clock, seededAt)) as KeyCount[], seededAt)
  // Which prefix rules each key matches, as seen before this start (the raw key is never kept).
  const patterns = new KeyPatternStore(ctx.db, ctx.ledger)
  // Rows of rules no longer in force go: now (SQLite: the rules in force are known), and with
  // every change of the rules (PostgreSQL: from the first read of the shared ones).
  if (!shared) patterns.sweep(engine.prefixPatterns())
  engine.onRules = (p) => patterns.sweep(p)
  engine.keepPatterns(patterns.all(), patterns.add)
  // What the file cannot take at the stop is kept in a spill file for the next start (PostgreSQL;
  // on SQLite both go with the ledger's batches, and its stop keeps them).
  const keep = () => keepUnwritten([holdFile, patterns], ctx.config.data_dir, ctx.log)
  ctx.onClose(() => {
    engine.holds.stopWaiting()
    keep()
    patterns.close()
    holdFile.close()
  })
  // An exit that cannot wait (a second signal) runs no closer: the same, and before it ends.
  ctx.onExit(async () => keep())
  const e = engine
  const r = ctx.config.runaway
  const runaway = new RunawayDetector({
    loop: { action: r.loop.action, repeats: r.loop.repeats, windowMinutes: r.loop.window_minutes },
    spendRate: { action: r.spend_rate.action, usdPerMinute: r.spend_rate.usd_per_minute },
  })
  // (PostgreSQL: `observe` tells the shared meters' read under way of the call, engine.onObserved.)
  const stop = ctx.ledger.onCall((call) => {
    e.observe(call)
    runaway.observe(call)
  })
  ctx.onClose(stop)
  const guard = { detector: runaway, windowMinutes: r.loop.window_minutes, usdPerMinute: r.spend_rate.usd_per_minute }
  if (shared) {
    shared.start(e)
    ctx.setGate(sharedBudgetGate(e, guard))
  } else {
    if (ctx.notices) ctx.onClose(own!.follow(ctx.notices))
    ctx.setGate(budgetGate(e, guard))
  }
  // Thresholds crossed by spend kept for a later period, as it starts (and, on SQLite, after the read above; PostgreSQL: after its first).
  ctx.onClose(watchHeldPeriods(e, !shared))
  ctx.budgets = e
  const b: Budgets = { engine: e, store: shared?.rules ?? local, runaway, history, feed: shared?.feed ?? null }
  installed.set(ctx, b)
  return b
}

/** Budget rules from the config and the database, enforced on every proxied call. */
export const budgets: Feature = (ctx) => {
  budgetsOf(ctx)
}
