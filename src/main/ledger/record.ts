/** One proxied call as the ledger stores it. */
export interface CallRecord {
  /** Arrival time, ms since the epoch. */
  ts: number
  provider: string
  model: string
  endpoint: string
  api_key_hash: string
  key_hint: string
  tenant: string
  agent: string
  session: string
  status: number
  streamed: boolean
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cache_write_1h_tokens: number
  reasoning_tokens: number
  cost_usd: number
  priced: boolean
  estimated: boolean
  latency_ms: number
  /** Why the call failed on our side (`client_aborted`, `upstream_timeout`, ...), else null. */
  error: string | null
}

/** Status recorded for a call the client abandoned before its response ended (nginx's convention). */
export const STATUS_CLIENT_CLOSED = 499
