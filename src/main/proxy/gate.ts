import type { AdmissionNotice } from '../budgets/feed/admission-told'
import type { CallBilling } from '../../shared/api'
import type { CallShape, Provider } from '../providers/types'
import type { PendingBackground } from '../budgets/decision'
import type { KeyIdentity } from './attribution'

/** What the proxy knows of a call before it goes upstream. */
export interface CallContext {
  provider: Provider
  shape: CallShape
  /**
   * The raw API key, for matching budget rule patterns (prefixes need the key itself).
   * In memory for this call only: never stored, logged or sent anywhere but upstream.
   */
  apiKey: string
  apiKeyHash: string
  keyHint: string
  /**
   * Every API key the call carries when there is more than one (the billed one, above, first).
   * All of them go upstream, so the call is admitted only when each one is (everyCredential).
   */
  credentials?: readonly KeyIdentity[]
  tenant: string
  agent: string
  session: string
  /** The client recognised from what it sends, whatever agent name the call is recorded under ('' when none). */
  client?: string
  /** The project the client states (X-Burnrate-Project, or its working directory), '' when none. */
  project?: string
  /** Arrival time, ms since the epoch. */
  ts: number
  /** The parsed JSON request body (undefined when not JSON). */
  body: any
  /** Size of the request body in bytes. */
  bodyBytes: number
  /**
   * `subscription` when the call is made with a plan's OAuth credential (no money per token,
   * see plans/billing.ts). A gate that budgets money leaves such calls alone; `settle` gets 0 for
   * them (their API-equivalent cost is recorded on the call, and kept apart from spend).
   */
  billing?: CallBilling
  /** Set by the budget engine (PostgreSQL): its admission was told to the other instances (`CallRecord.rate_announced`). */
  rateAnnounced?: boolean
  /** Whether that admission's notification was sent, or lost (then its storing counts it on the others). */
  admission?: AdmissionNotice
}

export interface Refusal {
  status: number
  headers: Record<string, string>
  body: unknown
  /** Recorded as the call's `error`. */
  reason: string
  /** The budget rule that refused the call, as shown (its `api_key_pattern`); absent for a runaway's refusal (`CallRecord.refused_rule`). */
  rule?: string
  /**
   * Refused for money already spent: a limit of the rule is reached, not only expected to be by
   * what the calls in flight (or this one) may add. What stops a response a Realtime server
   * started by itself (./ws/realtime-started.ts).
   */
  limitReached?: boolean
}

export interface Admission {
  /** Set when the call must not go upstream. */
  refuse?: Refusal
  /** Headers added to the response the client gets. */
  headers?: Record<string, string>
  /**
   * More headers for the response, from a check the gate lets run after the call has gone
   * upstream (a runaway check that cannot refuse it): called once, when the response's headers
   * are written; runs that check then if it has not run yet. Added after `headers`.
   */
  lateHeaders?: () => Record<string, string> | undefined
  /**
   * Queues what the gate left for after the call has been sent (that check) on an immediate:
   * called right after the call is handed to the upstream (undici queues its write on a
   * kept-alive connection first), or when it ends without being sent. Calling it again, or after
   * `lateHeaders`, does nothing more.
   */
  afterSend?: () => void
  /**
   * Called once when the call has ended, with its real cost (0 when it failed). May return the
   * shared budget spend rows that took the cost (`CallRecord.budget_settled`). `pending`: the call
   * created a background response still running, whose reservation stays held until its result
   * is in (../budgets/background-holds.ts).
   */
  settle?: (costUsd: number, pending?: PendingBackground) => string | void
  /**
   * Called, before `settle(0)`, when the admitted call is not sent after all (another API key it
   * carries was refused): what admitting it counted (a per-minute request) is taken back.
   */
  unsent?: () => void
  /**
   * Set when the decision waits on the database: the real admission, once known (the other
   * fields are then unset). Rejects when the gate failed.
   */
  pending?: Promise<Admission>
}

/** The admission once decided: `a` itself, or what its `pending` resolves to. */
export function decided(a: Admission): Admission | Promise<Admission> {
  return a.pending ?? a
}

/** Decides, before anything goes upstream, whether a call may proceed (budgets). */
export interface CallGate {
  /**
   * Decided in the same step for every in-process decision (the hot path never waits); an
   * admission with `pending` only when the decision needs the database (a `block` rule on
   * budget state shared in PostgreSQL).
   */
  admit(ctx: CallContext): Admission
}

export const OPEN_GATE: CallGate = { admit: () => ({}) }

/**
 * The context a key of a multi-key call is admitted with: the call's own for the billed key (the
 * one recorded), so what the gate marks on it reaches the recorded call (`rateAnnounced`: else
 * other instances counted its request again when it was stored); a copy with the key for the others.
 */
function contextOf(ctx: CallContext, k: KeyIdentity): CallContext {
  if (k.apiKeyHash === ctx.apiKeyHash) return ctx
  return { ...ctx, apiKey: k.apiKey, apiKeyHash: k.apiKeyHash, keyHint: k.keyHint }
}

/**
 * Admits a call only when `inner` admits it for every API key it carries: a call with a key
 * blocked at $0 in `?key=` and a decoy in `x-api-key` is refused, whichever one the provider
 * bills. The billed key is asked first; when one is refused, what the others reserved is
 * released. Warnings of all of them are sent. One key (nearly every call): `inner` alone.
 */
export function everyCredential(inner: CallGate): CallGate {
  return {
    admit(ctx) {
      const keys = ctx.credentials
      if (!keys || keys.length < 2) return inner.admit(ctx)
      const admitted: Admission[] = []
      const release = () => {
        for (const a of admitted) {
          a.afterSend?.()
          // Never sent: its request is not one of the key's per-minute requests.
          a.unsent?.()
          a.settle?.(0)
        }
      }
      const merged = (): Record<string, string> | undefined => {
        const headers: Record<string, string> = {}
        for (const a of admitted) {
          for (const h of [a.headers, a.lateHeaders?.()]) {
            for (const [name, value] of Object.entries(h ?? {})) headers[name] = headers[name] ? `${headers[name]}, ${value}` : value
          }
        }
        return Object.keys(headers).length ? headers : undefined
      }
      const combined = (): Admission => {
        // The billed key (asked first) is the call's recorded key: the cost is its alone, and its
        // spend rows are the call's. The others only free what they reserved (0: a shared budget
        // state would otherwise add the cost to their spend too), and are settled first, so that
        // the billed key's settlement is the one the engine learns the call's cost from.
        const settle = (cost: number, pending?: PendingBackground): string | void => {
          for (let i = admitted.length - 1; i > 0; i--) admitted[i].settle?.(0)
          return admitted[0]?.settle?.(cost, pending)
        }
        // Not sent after all (a Realtime upgrade's check): what admitting it counted for each key is taken back.
        const unsent = (): void => {
          for (const a of admitted) a.unsent?.()
        }
        // Headers of a check that runs late are merged when they are asked for, in the same order.
        if (admitted.some((a) => a.lateHeaders || a.afterSend)) {
          const afterSend = (): void => {
            for (const a of admitted) a.afterSend?.()
          }
          return { settle, unsent, lateHeaders: merged, afterSend }
        }
        return { headers: merged(), settle, unsent }
      }
      // Keys in order; in one step until a key's decision waits on the database, then the rest follow it.
      const from = (i: number): Admission => {
        for (; i < keys.length; i++) {
          let a: Admission
          try {
            a = inner.admit(contextOf(ctx, keys[i]))
          } catch (err) {
            release()
            throw err
          }
          if (a.pending) {
            const next = i + 1
            const rest = a.pending.then(
              (x) => {
                if (x.refuse) {
                  release()
                  return x
                }
                admitted.push(x)
                return decided(from(next))
              },
              (err: unknown) => {
                release()
                throw err
              },
            )
            return { pending: rest }
          }
          if (a.refuse) {
            release()
            return a
          }
          admitted.push(a)
        }
        return combined()
      }
      return from(0)
    },
  }
}
