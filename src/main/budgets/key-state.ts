import type { Rule } from './rules'

/** What the engine knows of one API key, by hash. The raw key is never kept. */
export interface KeyState {
  hash: string
  hint: string
  tenant: string
  /** Start of the month `requestsMonth` counts in. */
  monthStart: number
  requestsMonth: number
  lastSeen: number | null
  /** Rule memo: the rules whose key pattern matches the key under index `gen`, in precedence order. */
  gen: number
  candidates: Rule[]
  /** Every prefix pattern the key was seen to match (to find its rules by hash after a restart). */
  known: Set<string>
}
