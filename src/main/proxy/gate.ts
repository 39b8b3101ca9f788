import type { CallShape, Provider } from '../providers/types'

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
  tenant: string
  agent: string
  session: string
  /** The project the client states (X-Burnrate-Project, or its working directory), '' when none. */
  project?: string
  /** Arrival time, ms since the epoch. */
  ts: number
  /** The parsed JSON request body (undefined when not JSON). */
  body: any
  /** Size of the request body in bytes. */
  bodyBytes: number
}

export interface Refusal {
  status: number
  headers: Record<string, string>
  body: unknown
  /** Recorded as the call's `error`. */
  reason: string
}

export interface Admission {
  /** Set when the call must not go upstream. */
  refuse?: Refusal
  /** Headers added to the response the client gets. */
  headers?: Record<string, string>
  /** Called once when the call has ended, with its real cost (0 when it failed). */
  settle?: (costUsd: number) => void
}

/** Decides, before anything goes upstream, whether a call may proceed (budgets). */
export interface CallGate {
  admit(ctx: CallContext): Admission
}

export const OPEN_GATE: CallGate = { admit: () => ({}) }
