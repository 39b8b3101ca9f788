import type { CallRecord } from '../ledger/record'
import type { BudgetAnnouncer } from './announcer'
import type { AdmissionRow, FeedRow } from './feed/publish'
import type { KeyCount, KeyRegistry } from './key-registry'
import type { Meter } from './meter'
import type { MeterBook } from './meter-book'
import type { Scope } from './scope'

/**
 * PostgreSQL mode (./shared.ts, ./feed/): what the other instances' calls bring to this
 * instance's key registry and meters, this instance's calls a read of every instance's missed,
 * and the patterns this instance tells the others its keys match. This instance's calls are
 * counted as it records them (`BudgetEngine.observe`); these come off the proxy's path, as the
 * calls feed and the reads bring them.
 */
export class SharedCounts {
  constructor(
    private readonly book: MeterBook,
    private readonly keys: KeyRegistry,
    private readonly announcer: BudgetAnnouncer,
  ) {}

  /**
   * Calls other instances stored (PostgreSQL mode, ./feed/), summed per key, scope,
   * session and minute: counted in the registry and the meters as a reload counts the same rows
   * (their tokens in the last minute's count when they ended in it), their requests in the
   * per-minute count of the rule that decides the key's calls here; thresholds they cross are
   * announced as for this instance's own calls.
   */
  observeStored(rows: readonly FeedRow[], now = Date.now()): void {
    for (const [hash, hint, provider, model, requested, agent, tenant, session, t, cost, tokens, last, calls, requests] of rows) {
      const s = this.keys.state(hash, hint)
      if (hint) s.hint = hint
      this.keys.count(s, last, tenant, calls, now)
      if (this.book.index.empty) continue
      const scope: Scope = { provider, model, requested, agent, tenant }
      const touched: Meter[] = []
      this.book.account(s, scope, t, cost, tokens > 0 && last > now - 60_000 ? tokens : 0, session, last, now, touched)
      this.book.countOthersRequests(s, scope, requests, now)
      this.book.announce(s, touched, session, now)
    }
  }

  /**
   * The rule patterns the senders of other instances' stored calls saw each key match (this
   * instance may never see the raw key): learnt from every call heard, counted here or already
   * read (`observeStored` counts them).
   */
  learnPatterns(rows: readonly FeedRow[]): void {
    for (const r of rows) this.keys.learn(this.keys.state(r[0], r[1]), r[14])
  }

  /**
   * Calls other instances admitted under a rule with a per-minute request limit (PostgreSQL mode,
   * ./feed/admissions.ts), [hash, provider, model, agent, tenant, calls, known patterns]: in the
   * last-minute request count of the rule that decides the key's calls here, as they are admitted
   * (their storing is not counted again: `CallRecord.rate_announced`).
   */
  observeAdmissions(rows: readonly AdmissionRow[], now = Date.now()): void {
    if (this.book.index.empty) return
    for (const [hash, provider, model, agent, tenant, n, known] of rows) {
      if (typeof hash !== 'string' || !(n > 0)) continue
      const s = this.keys.state(hash, '')
      this.keys.learn(s, known)
      this.book.countOthersRequests(s, { provider, model, agent, tenant }, n, now)
    }
  }

  /**
   * This instance's calls a reload's rows missed (PostgreSQL mode: stored after its snapshot, or
   * not yet), counted again in the rebuilt meters as `BudgetEngine.observe` counted them; their
   * thresholds were announced then.
   */
  recount(calls: readonly CallRecord[], now = Date.now()): void {
    if (this.book.index.empty) return
    for (const call of calls) {
      const s = this.keys.state(call.api_key_hash, call.key_hint)
      for (const m of this.book.accountCall(s, call, now)) this.announcer.thresholds(s, m, now, true)
    }
  }

  /** The key registry's monthly request counts set again (PostgreSQL mode), read for `readAt`'s month: ./key-registry.ts. */
  reseed(rows: readonly KeyCount[], missed: readonly CallRecord[], readAt: number, now = Date.now()): void {
    this.keys.reseed(rows, missed, readAt, now)
  }

  /** The moment a re-read of this month's keys at `now` is for: never a month before the one the registry is in (./key-registry.ts readAt). */
  keysReadAt(now: number): number {
    return this.keys.readAt(now)
  }

  /** The prefix patterns a key (by hash) is known to match: seen with its raw key here, or told by another instance. */
  knownPatterns(hash: string): readonly string[] {
    return this.keys.patterns(this.keys.get(hash))
  }
}
