import type { Rule } from './rules'

/** What the engine knows of one API key, by hash. The raw key is never kept. */
export interface KeyState {
  hash: string
  hint: string
  tenant: string
  /** Start of the month `requestsMonth` counts in, and of the next (a call stamped from then on is a later month's). */
  monthStart: number
  monthEnd: number
  requestsMonth: number
  /**
   * Requests stamped in a later month than `monthStart`'s (ahead of the clock: a team member's
   * running fast, an agent's log imported from such a machine), by that month's start: its
   * requests once the key's count rolls into it. Null: none.
   */
  laterMonths: Map<number, number> | null
  lastSeen: number | null
  /** Rule memo: the rules whose key pattern matches the key under index `gen`, in precedence order. */
  gen: number
  candidates: Rule[]
  /** Every prefix pattern the key was seen to match (to find its rules by hash after a restart). */
  known: Set<string>
}
