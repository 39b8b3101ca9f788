import type { CallBilling } from '../../shared/api'
import { publishMoves } from '../budgets/feed/publish'
import type { CostAdjustment, KeyLatest, LearntUsage } from '../budgets/types'
import { type CostChange, type TokenChange, adjustRollups } from '../dashboard/rollup/adjust'
import { listenersPerOwner } from '../ledger/listeners'
import { markRevised, revised } from '../ledger/revisions'
import type { CallLedger as Ledger } from '../ledger/types'
import { isBatchResult } from '../providers/batch-results'
import type { SqlStore } from '../storage/sql'

/** What a stored call is counted by: the rollups' groupings and the budgets' scopes. */
export interface MovedCall {
  id: number
  ts: number
  provider: string
  model: string
  api_key_hash: string
  tenant: string
  agent: string
  session: string
  project: string
  member: string
  /** The model the call requested when the answer named another (budget rules match either). */
  requested_model: string | null
  billing: CallBilling
  /** The call's endpoint (the metrics' operation), when the reader selected it. */
  endpoint?: string
  /** `import`: stored from an agent's log, never in the metrics' per-call counters, so neither are its moves. */
  source?: string
}

/**
 * Whether the metrics' per-call counters counted call `r` when it was stored, so that its cost's
 * moves are theirs too: the proxy's own calls, not an agent's logged call (`import`) nor a Batch
 * API request stored from its results file (`batch.*`, whose stored `source` is `proxy`).
 */
function inCallCounters(r: MovedCall): boolean {
  return r.source !== 'import' && !isBatchResult(r.endpoint)
}

/** A recorded call's cost moved by `delta` (and its tokens by `tokens`), as the metrics count them (every call's, plan calls' too). */
export interface MovedCost {
  provider: string
  model: string
  endpoint: string
  agent: string
  tenant: string
  /** Money (`api`) or a plan's API-equivalent value (`subscription`): the cost counters keep them apart. */
  billing: CallBilling
  delta: number
  /** What its token counts moved by (a background response's estimate replaced by its real usage); absent when only its cost moved. */
  tokens?: TokenChange
  /** How the call's marks changed with the move (`CallMarks`); absent when neither did. */
  marks?: CallMarks
}

/**
 * A recorded call's `priced` and `estimated` marks changing after it was counted: `priced`, a call
 * recorded unpriced got a price (re-priced, or a job's real usage priced once its model had one);
 * `unpriced`, a priced call lost it (a job's real usage its model has no price for); `settled`, an
 * estimated call took its real usage. The metrics count these apart (their counters never go down).
 */
export interface CallMarks {
  priced?: boolean
  unpriced?: boolean
  settled?: boolean
}

function anyMark(m: CallMarks | undefined): m is CallMarks {
  return m !== undefined && (m.priced === true || m.unpriced === true || m.settled === true)
}

const costsMoved = listenersPerOwner<readonly MovedCost[]>()

/** Runs `fn` with the cost (and token) moves of each committed transaction of `ledger` (re-pricing, background responses); returns the unsubscribe. */
export function onCostMoved(ledger: object, fn: (moves: readonly MovedCost[]) => void): () => void {
  return costsMoved.on(ledger, fn)
}

function movesTokens(tokens: TokenChange | undefined): boolean {
  return tokens !== undefined && Object.values(tokens).some((n) => n !== 0 && n !== undefined)
}

/** What the rollups move by when call `r` costs `delta` more (and has `tokens` more): its groupings and the difference. */
export function costChangeOf(r: Omit<MovedCall, 'id' | 'requested_model'>, delta: number, tokens?: TokenChange): CostChange {
  return {
    ts: r.ts, provider: r.provider, model: r.model, api_key_hash: r.api_key_hash, tenant: r.tenant, agent: r.agent, session: r.session,
    project: r.project, member: r.member, billing: r.billing, delta, tokens,
  }
}

/** Where the budgets' spend is moved: this process's meters, and PostgreSQL's shared spend rows. */
export interface SpendTargets {
  /** The budget rules' meters in this process, moved once the transaction is committed. */
  meters?: {
    adjust(changes: readonly CostAdjustment[], now?: number, committedIn?: number | null): void
    learnBackground?(provider: string, responseId: string, usage: LearntUsage): void
  } | null
  /** PostgreSQL's shared spend rows, moved in the transaction that changes the calls (budgets/state/pg/call-spend.ts). */
  shared?: (tx: SqlStore, changes: readonly CostAdjustment[]) => Promise<void>
  /** PostgreSQL: this process's id on the calls feed (budgets/feed/), so the moves reach the other instances and not this one twice. */
  feedId?: string
}

/**
 * The calls one transaction changed the cost (or tokens) of, and what that moves: the rollups
 * that already include them, in the same transaction, and then, once committed, today's and this
 * month's spend and the budget meters (`publish`). Used by re-pricing and by background
 * responses taking their real usage, so both move the same things the same way.
 */
export class CostMoves {
  readonly changes: CostChange[] = []
  readonly spend: CostAdjustment[] = []
  /** Every call changed, for its revision (../ledger/revisions.ts). */
  private readonly ids: number[] = []
  /** Every cost (and token count) that moved, for the metrics (onCostMoved). */
  private readonly costs: MovedCost[] = []

  /** PostgreSQL: the transaction the moves were made in, once applied (null: not known). */
  private xid: number | null = null

  /** `folded`: the last call id the rollups include (`foldedUpTo`). */
  private constructor(private readonly folded: number) {}

  /** For calls changed in `tx`: on SQLite, calls past the rollups' mark are folded later, with their new values (on PostgreSQL the rollups are written in the same transaction as the calls: all are folded). */
  static async in(tx: SqlStore): Promise<CostMoves> {
    const last = tx.dialect === 'sqlite' ? ((await tx.get<{ id: number }>('SELECT last_call_id AS id FROM dash_state WHERE id = 1'))?.id ?? 0) : Infinity
    return new CostMoves(last)
  }

  /**
   * Call `r` (its row already updated in the transaction) now costs `delta` more (and has `tokens`
   * more). `usageIn`: the id of the background response whose real usage it took, which ends the
   * hold of its budget reservation (a re-price leaves the hold of a job still running), also when
   * its real cost is its estimate (the move then carries no money, only the end of the hold).
   * `marks`: how its marks changed. `requests`: -1 when the call is no longer a request (an
   * imported call superseded), `latest` with it: the key's newest call still a request.
   */
  add(
    r: MovedCall, delta: number, tokens?: TokenChange,
    { usageIn, marks, requests, latest }: { usageIn?: string; marks?: CallMarks; requests?: number; latest?: KeyLatest | null } = {},
  ): void {
    this.ids.push(r.id)
    if (r.id <= this.folded) this.changes.push(requests ? { ...costChangeOf(r, delta, tokens), requests, source: r.source } : costChangeOf(r, delta, tokens))
    const marked = anyMark(marks)
    if ((delta !== 0 || movesTokens(tokens) || marked) && inCallCounters(r)) {
      this.costs.push({
        provider: r.provider, model: r.model, endpoint: r.endpoint ?? '', agent: r.agent, tenant: r.tenant, billing: r.billing, delta, tokens,
        ...(marked ? { marks } : {}),
      })
    }
    // Money only: a plan's (subscription) call is neither today's spend nor a budget's. A call no
    // longer a request is one request less of its key (the admin API's requests_month) whatever it
    // cost: a plan's call, or one at $0, moves its key's requests and no money.
    const plan = r.billing === 'subscription'
    const money = plan ? 0 : delta
    if ((!plan && (delta !== 0 || usageIn !== undefined)) || requests) {
      this.spend.push({
        api_key_hash: r.api_key_hash, ts: r.ts, provider: r.provider, model: r.model, requested_model: r.requested_model, agent: r.agent,
        tenant: r.tenant, session: r.session, delta: money, ...(usageIn !== undefined && !plan ? { usage_in: true, response_id: usageIn } : {}), ...(requests ? { requests } : {}),
        ...(requests && latest !== undefined ? { latest } : {}),
      })
    }
  }

  /**
   * Call `was` (its row already updated in the transaction) is now counted as `now`: another
   * provider or billing (an imported call a later line of its log named a plan's). It leaves what
   * it was counted by, its cost, tokens and request (`was` at `wasCost` with `wasTokens`, given
   * negative), and joins what it is counted by now, as folding it afresh counts it: the rollups of
   * both, the money of either that is money (today's spend, the budgets' meters and spend rows,
   * each under its own provider). Its key's requests do not move: it is one request of it still.
   */
  reclass(was: MovedCall, wasCost: number, wasTokens: TokenChange, now: MovedCall, nowCost: number, nowTokens: TokenChange): void {
    this.ids.push(was.id)
    if (was.id <= this.folded) {
      this.changes.push({ ...costChangeOf(was, -wasCost, wasTokens), requests: -1, source: was.source })
      this.changes.push({ ...costChangeOf(now, nowCost, nowTokens), requests: 1, source: now.source })
    }
    for (const [r, delta, tokens] of [[was, -wasCost, wasTokens], [now, nowCost, nowTokens]] as const) {
      if ((delta !== 0 || movesTokens(tokens)) && inCallCounters(r)) {
        this.costs.push({ provider: r.provider, model: r.model, endpoint: r.endpoint ?? '', agent: r.agent, tenant: r.tenant, billing: r.billing, delta, tokens })
      }
      if (r.billing === 'subscription' || delta === 0) continue
      this.spend.push({
        api_key_hash: r.api_key_hash, ts: r.ts, provider: r.provider, model: r.model, requested_model: r.requested_model, agent: r.agent,
        tenant: r.tenant, session: r.session, delta,
      })
    }
  }

  /** Moves the rollups and, on PostgreSQL, the shared spend rows, in the transaction; numbers the calls' revision. */
  async apply(tx: SqlStore, budgets: SpendTargets): Promise<void> {
    await markRevised(tx, this.ids)
    // Spend rows before rollups: the order a ledger batch locks them in (../storage/open.ts, then
    // ../dashboard), so a move and another instance's batch never wait on each other in a cycle.
    if (budgets.shared && tx.dialect === 'postgres') await budgets.shared(tx, this.spend)
    await adjustRollups(tx, this.changes)
    // Every other instance moves its meters and today's spend once this commits (PostgreSQL only).
    if (budgets.feedId !== undefined) this.xid = await publishMoves(tx, budgets.feedId, this.spend)
  }

  /** Once committed: today's and this month's spend per key, the budget meters of this process, the revisions' listeners (the team sender) and the cost moves' (metrics). */
  publish(ledger: Pick<Ledger, 'spend' | 'catchUp'>, budgets: SpendTargets): void {
    // SQLite: a call `burnrate import` stored beside this server before the move, its notice not
    // read yet, counted first: else its cost was taken off a spend that never held it (at 0, lost)
    // and added after, one answer's money counted twice (a supersede), and its key kept its time.
    ledger.catchUp?.()
    for (const s of this.spend) ledger.spend.adjust(s.api_key_hash, s.ts, s.delta)
    // With the transaction's id: a read of the meters under way that did not see it moves them again (../budgets/shared.ts).
    budgets.meters?.adjust(this.spend, undefined, this.xid)
    if (this.ids.length > 0) revised(ledger)
    if (this.costs.length > 0) costsMoved.emit(ledger, this.costs)
  }
}
