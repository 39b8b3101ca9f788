import type { CallRecord } from '../ledger/record'
import type { ServerContext } from '../server/context'
import { PostgresStore } from '../storage/postgres'
import { firstLoad } from '../storage/shared-table'
import { PgAnnounced } from './announced'
import type { BudgetEngine } from './engine'
import type { CallHistory } from './expected'
import type { HistoryRow } from './meter-book'
import { OwnRows } from './own-rows'
import { historyStart, sessionHistoryStart } from './scope'
import { AdmissionAnnouncer } from './feed/admissions'
import { SharedCallFeed } from './feed/listen'
import { type FeedRow, feedIdOf, shareKnownPatterns } from './feed/publish'
import { type Snapshot, visibleIn } from './feed/snapshot'
import { shareBudgetClock } from './shared-clock'
import { SharedHistory } from './shared-history'
import { PgRuleStore } from './shared-rules'
import { PgBudgetState } from './state/postgres'
import type { RuleStore } from './store'
import type { CostAdjustment } from './types'

/**
 * How many rows (per key, scope, session and minute: ./own-rows.ts) the meters may keep beside
 * the last read's, this instance's calls and what else they counted since it (`unread`, `since`),
 * before reading the calls again. Reads come at start-up, rule and clock changes and when the
 * calls feed may have missed something: on a busy cluster with none of those, they grew with
 * every call for as long as the process ran, last month's and older among them (tests lower it).
 */
export const KEPT_ROWS = { max: 50_000 }

/**
 * PostgreSQL (`storage.url`): what the instances on one database share for budgets. The rules
 * (PostgreSQL's, copied into the data folder's `budget_rules` so an instance starting while the
 * database is away enforces the last ones it read), the block rules' spend rows (`state`), the
 * budget clock, and the meters: read from every instance's calls (at start-up, after each rule
 * or clock change, and whenever the calls feed may have missed something), then following the
 * other instances' calls as they are stored (./feed/). SQLite's counterpart: ./local-history.ts.
 */
export class SharedBudgets {
  readonly history: SharedHistory
  readonly rules: PgRuleStore
  readonly state: PgBudgetState
  /** The thresholds announced in calendar periods, shared by the instances (./announced.ts). */
  readonly announced: PgAnnounced
  /** Other instances' calls as they are stored (null until `start`). */
  feed: SharedCallFeed | null = null
  private engine: BudgetEngine | null = null
  /** A read of the meters' calls failed, and none has succeeded since. */
  private readFailing = false
  /** This instance's calls recorded during each read under way. */
  private readonly during = new Set<CallRecord[]>()
  /** This instance's cost moves (re-pricing, a job's result) during each read under way, with their transactions. */
  private readonly movedDuring = new Set<OwnMove[]>()
  private closed = false
  /** The first read has checked the thresholds of periods that began with spend kept for them. */
  private heldChecked = false
  /**
   * The calls the last read found, handed to the engine's reloads (`rows`). Set only with the
   * thresholds announced that the same read found: a reload between (a rule change, the shared
   * rules' first read) would take a crossing in the new rows as seen and not told, and the read's
   * own reload, knowing it announced, would find it seen already and not tell `onRestored`.
   */
  private readRows: HistoryRow[] = []
  /** This instance's calls `readRows` does not hold: counted in every reload with them (./own-rows.ts). */
  private readonly unread = new OwnRows()
  /**
   * What else the meters counted since the last read, which `readRows` does not hold: other
   * instances' calls heard on the feed, and the cost moves (re-pricing, a job's result, an imported
   * call re-classed or superseded) of this instance and the others. A reload with the read's rows
   * alone (a rule change) dropped them from the meters until the read that follows ended: the
   * budgets API showed the key's spend without them, and a call that crossed a threshold with them
   * was counted under it, its crossing then taken as announced by that read.
   */
  private readonly since = new OwnRows()
  /** How many of those rows the last read left (its missed calls and moves), and whether a read was asked for past KEPT_ROWS (`bound`). */
  private keptAfterRead = 0
  private boundAsked = false

  constructor(
    private readonly ctx: ServerContext,
    local: RuleStore,
    /** Learns from other instances' stored calls which model a requested name was answered as. */
    private readonly answers?: CallHistory,
  ) {
    this.history = new SharedHistory(ctx.store, ctx.ledger)
    this.rules = new PgRuleStore(ctx.store, (rules) => {
      this.engine?.setRuntimeRules(rules)
      void this.reload()
      try {
        local.replaceAll(rules)
      } catch {
        // the copy is a convenience; the rules in force are the ones just read
      }
    })
    this.state = new PgBudgetState(ctx.store, { admissionWaitMs: ctx.config.storage.budget_wait_ms })
    this.announced = new PgAnnounced(ctx.store, ctx.db)
  }

  /** The rows the last read found (the engine's `loadHistory`: it reads synchronously, so they are read ahead). */
  rows(): HistoryRow[] {
    const own = this.unread.list()
    const rows = own.length === 0 ? this.readRows : [...this.readRows, ...own]
    return this.since.empty ? rows : this.since.over(rows)
  }

  /** This instance's own call, as the ledger records it or as it is stored another way (a batch's requests, an import): counted again after a read under way that missed it. */
  ownCall(call: CallRecord): void {
    for (const d of this.during) d.push(call)
    this.unread.add(call)
    this.bound()
  }

  /** Past KEPT_ROWS more rows kept than the last read left: the calls read again (its rows hold them, and the kept ones are let go). */
  private bound(): void {
    if (this.boundAsked || !this.engine || this.unread.size + this.since.size <= this.keptAfterRead + KEPT_ROWS.max) return
    this.boundAsked = true
    void this.reload().catch(() => {})
  }

  /** Reads the meters again (through the feed, which holds what it hears meanwhile). */
  reload(): Promise<void> {
    return this.feed ? this.feed.reload() : this.read().then(() => {})
  }

  /** Follows the shared rules, clock and calls for `engine`, and reads its meters (start-up never waits on it). */
  start(engine: BudgetEngine): void {
    const { ctx } = this
    this.engine = engine
    // Until the first read of every instance's calls (`read`).
    engine.metersRead = false
    // Every call it counts, however stored (a batch's requests and imports too, not only the ledger's).
    engine.onObserved = (call) => this.ownCall(call)
    // And every cost move it makes: a read under way rebuilds the meters from a snapshot that may not hold it.
    engine.onMoved = (changes, xid) => {
      for (const d of this.movedDuring) d.push({ changes, xid })
      this.moved(changes)
    }
    void firstLoad(this.rules, () => this.closed)
    // The meters again in the new periods when another instance moved the clock.
    const clock = shareBudgetClock(ctx.store, ctx.config, engine.clock, ctx.log, () => void this.reload())
    ctx.onClose(() => clock.close())
    if (ctx.store instanceof PostgresStore) {
      const feedId = feedIdOf(ctx.store)
      const feed = new SharedCallFeed(
        ctx.store,
        feedId,
        { rows: (r) => this.count(r), known: (r) => this.learn(r), moves: (m) => this.move(m), admissions: (a) => engine.shared.observeAdmissions(a), reload: () => this.read() },
        ctx.log,
      )
      this.feed = feed
      // Calls admitted under per-minute request limits, told to the others as they are admitted.
      const admissions = new AdmissionAnnouncer(ctx.store, feedId)
      engine.onAdmitted = admissions.add
      engine.onWithdrawn = admissions.withdraw
      ctx.onClose(() => admissions.close())
      shareKnownPatterns(ctx.store, (hash) => engine.shared.knownPatterns(hash))
      feed.start()
      ctx.healthSections.calls_feed = () => feed.status()
      ctx.onClose(() => feed.close())
    }
    // The key registry and the meters from every instance's calls.
    void this.reload().catch(() => {})
    ctx.onClose(async () => {
      this.closed = true
      this.rules.close()
      this.announced.close()
      await this.state.close()
    })
  }

  /**
   * What other instances' stored calls tell besides their money, counted or not (a read of the
   * meters found them first): an answer naming another model than asked for, and the rule
   * patterns the sender saw each key match. A read's rows carry neither: without them this
   * instance would not know, until the key's next call elsewhere, that a rule naming the answered
   * model governs a request for the other name, or that a `sk-team-*` rule's listing has the key.
   */
  private learn(rows: readonly FeedRow[]): void {
    // [.., provider, model, requested_model, ..]
    if (this.answers) for (const r of rows) if (r[4]) this.answers.noteAnswered(r[2], r[4], r[3])
    this.engine?.shared.learnPatterns(rows)
  }

  /** Other instances' stored calls: in the meters and today's spend. */
  private count(rows: readonly FeedRow[]): void {
    this.learn(rows)
    // [api_key_hash, .., agent, tenant, session, minute, cost, tokens, last ts, ..]: an inferred session goes on here.
    const sessions = this.ctx.sessions
    if (sessions) for (const r of rows) if (r[7].startsWith('auto-')) sessions.observe(r[5], r[0], r[7], r[11])
    this.engine?.shared.observeStored(rows)
    for (const r of rows) this.ctx.ledger.spend.add(r[0], r[8], r[9])
    // [.., minute, cost, tokens, last ts, ..]
    for (const r of rows) {
      this.since.addRow({ api_key_hash: r[0], key_hint: r[1], provider: r[2], model: r[3], requested: r[4], agent: r[5], tenant: r[6], session: r[7], t: r[8], cost: r[9], last: r[11] })
    }
    this.bound()
  }

  /** Other instances' moves of stored calls' costs: the meters and today's spend move by them. */
  private move(moves: readonly CostAdjustment[]): void {
    this.engine?.adjust(moves)
    for (const m of moves) this.ctx.ledger.spend.adjust(m.api_key_hash, m.ts, m.delta)
    this.moved(moves)
  }

  /** Cost moves the meters made since the last read (`since`). */
  private moved(moves: readonly CostAdjustment[]): void {
    for (const m of moves) {
      if (m.delta === 0 || !Number.isFinite(m.delta)) continue
      this.since.addRow({
        api_key_hash: m.api_key_hash, key_hint: '', provider: m.provider, model: m.model, requested: m.requested_model ?? null, agent: m.agent,
        tenant: m.tenant, session: m.session, t: m.ts, cost: m.delta, last: m.ts,
      })
    }
    this.bound()
  }

  /** The calls the meters count, with the spend and keys (./shared-history.ts), and the thresholds announced, read now. */
  private async load(en: BudgetEngine, during: readonly CallRecord[]) {
    const now = Date.now()
    const active = en.rules.active()
    const keysOf = { clock: en.clock, readAt: (t: number) => en.shared.keysReadAt(t) }
    const [loaded, announced] = await Promise.all([
      this.history.load(historyStart(active, en.clock, now), () => during, keysOf, sessionHistoryStart(active, now)),
      // The thresholds any instance announced in periods not yet ended: not announced again.
      // (Not read: the meters load all the same; the webhooks are still claimed once each, ../alerts/claims.ts.)
      this.announced.load(now).catch(() => []),
    ])
    return { ...loaded, announced, now }
  }

  /**
   * Whether the spend totals have rolled into a day after `spentAt`'s, or the key registry into a
   * month after `keysAt`'s: what a read for those moments finds would take them back (./shared-history.ts).
   */
  private overtaken(spentAt: number, keysAt: number): boolean {
    const spend = this.ctx.ledger.spend
    const en = this.engine!
    return spend.readAt(spentAt) >= spend.clock.dayOf(spentAt).end || en.shared.keysReadAt(keysAt) >= en.clock.monthOf(keysAt).end
  }

  /**
   * The meters again from every instance's calls, once the rows are read; resolves with the
   * snapshot they were read in (it tells the feed which other instances' calls they already
   * hold), null when the read failed.
   */
  private async read(): Promise<Snapshot | null> {
    const en = this.engine
    if (!en) return null
    const { ctx } = this
    // This instance's calls counted while the rows are read, and those recorded before it that the
    // ledger has not stored yet: those the read missed (stored after its snapshot, or not yet) are
    // counted again once the meters are rebuilt from it, the others not. A read waits for the calls
    // recorded before it to be stored, but that wait ends all the same when the ledger's write
    // fails (its connection lost, PostgreSQL briefly away for it): the meters were then rebuilt
    // without them, the key's spend back under its limits until a later read. (The ledger's queue,
    // at most ledger.max_pending calls: not a list of every call since the last read.)
    const during: CallRecord[] = [...(ctx.ledger.queuedCalls?.() ?? [])]
    this.during.add(during)
    const moved: OwnMove[] = []
    this.movedDuring.add(moved)
    try {
      let got = await this.load(en, during)
      // Read again when the spend totals or the key registry rolled into a later day or month
      // while the rows were read (a call after midnight) than the one they were read for: kept
      // there, the rows took them back to the ended one, the new day's calls held for later, and
      // with the wall clock stepped back across midnight meanwhile nothing rolled them on again
      // (the budgets API's answer, the tray and the admin API's keys in the ended day and month,
      // a key blocked again there) until it was past midnight again. A period never goes back.
      while (this.overtaken(got.spentAt, got.keysAt)) got = await this.load(en, during)
      const { now, announced, rows, snapshot, read, spend, spentAt, keys, keysAt } = got
      // Which model each requested name was answered as, from the calls read: those whose
      // notifications this instance did not hear (stored before it listened, or while its
      // listening connection was lost or deaf) teach it nothing else. Only names with no known
      // answer: one this instance gave or heard meanwhile may be newer than the read.
      this.answers?.noteAnsweredFromRead(rows)
      // The rows and the thresholds announced go to the engine together (`readRows`).
      en.rememberAnnounced(announced, now)
      this.readRows = rows
      // This instance's calls the rows miss are counted below (`recount`), and kept for later reloads.
      const missed = during.filter((c) => !(c.call_key && read.has(c.call_key)))
      this.unread.clear()
      // What the meters counted since the last read is in these rows, or made again below.
      this.since.clear()
      en.reload()
      // Today's spend and the key registry too (tray, `burnrate_spend_usd`, key listings): every instance's, from the same snapshot.
      // (Kept as the day they were read for: a read that straddled midnight made yesterday's whole spend today's.)
      ctx.ledger.spend.replace(spend, spentAt)
      // (The keys in the month they were read for, `keysAt`'s: once it has ended, their next calls start the new one.)
      if (keys) en.shared.reseed(keys, missed, keysAt)
      en.shared.recount(missed)
      for (const c of missed) this.unread.add(c)
      for (const c of missed) ctx.ledger.spend.addCall(c)
      // This instance's moves committed after the snapshot were made on the meters just replaced: made again.
      for (const m of moved) {
        if (visibleIn(m.xid, snapshot)) continue
        en.adjust(m.changes)
        for (const c of m.changes) ctx.ledger.spend.adjust(c.api_key_hash, c.ts, c.delta)
        this.moved(m.changes)
      }
      en.metersRead = true
      this.keptAfterRead = this.unread.size + this.since.size
      this.boundAsked = false
      // Thresholds crossed by spend kept for a period that began before this start, not announced yet (./held-check.ts).
      if (!this.heldChecked) {
        this.heldChecked = true
        en.announceHeld()
      }
      if (this.readFailing) ctx.log.info('budgets: the calls the meters count are read from PostgreSQL again')
      this.readFailing = false
      return snapshot
    } catch (err) {
      // PostgreSQL away: the meters keep what they have; the feed reads again (logged once until it can)
      if (!this.readFailing) ctx.log.warn(`budgets: could not read the calls the meters count from PostgreSQL (${err instanceof Error ? err.message : String(err)}); trying again`)
      this.readFailing = true
      // Asked again past as many more (not at each call while PostgreSQL is away).
      if (this.boundAsked) this.keptAfterRead = this.unread.size + this.since.size
      this.boundAsked = false
      return null
    } finally {
      this.during.delete(during)
      this.movedDuring.delete(moved)
    }
  }
}

/** A cost move this instance made while its meters were read, and the transaction that made it. */
interface OwnMove {
  changes: readonly CostAdjustment[]
  xid: number
}
