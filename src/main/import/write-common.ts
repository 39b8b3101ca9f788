import type Database from 'better-sqlite3'
import type { CallRecord } from '../ledger/record'
import { usageExtra } from '../metering/usage-extra'
import { reportedUsd } from '../metering/usage'
import type { SqlStore } from '../storage/sql'
import { completeImported, type Grown, type Superseded } from './grown'
import type { StoreStats, WriteOptions } from './importer'
import type { LoggedCall, StoredAs } from './types'

/*
 * What the two ledgers' import writers share (./write-sqlite.ts, ./write-postgres.ts): how a
 * logged call becomes a call record, how its proxied twin is looked for, and how calls imported
 * before take the larger usage their log now gives.
 */

/** A proxied call is looked for this long before a logged call's time, and this long after (clocks differ a little). */
export const MATCH_BEFORE_MS = 15 * 60_000
export const MATCH_AFTER_MS = 60_000

/**
 * The providers a proxied twin may be recorded under besides the log's own: an agent logged in to
 * its vendor's plan goes through Burnrate to the plan's backend, which the proxy records as its
 * own provider (Codex with a ChatGPT login: `chatgpt`; Gemini CLI with a Google login:
 * `code-assist`), and an agent on a cloud's platform goes through its route (Gemini CLI or Claude
 * Code on Vertex AI: `vertex`; Claude Code on Bedrock: `bedrock`; on Microsoft Foundry: `foundry`),
 * while the agent's log names the API's (`openai`, `gemini`, `anthropic`). Three at most (the
 * queries' `@alias`, `@alias2`, `@alias3`).
 */
const TWIN_PROVIDERS: Record<string, readonly [string, string, string?]> = {
  openai: ['chatgpt', 'azure'],
  gemini: ['code-assist', 'vertex'],
  anthropic: ['vertex', 'bedrock', 'foundry'],
}

/**
 * What a proxied twin of a logged call is looked for by: the same counts near the same time,
 * from a proxied call of its provider (or the plan's, above). When the log names the answer's id
 * (Claude Code's message id), a proxied call that recorded another id is another call, whatever
 * its counts: only one that recorded none, or the same, can be its twin.
 */
export function twinQuery(c: LoggedCall) {
  return {
    from: c.ts - MATCH_BEFORE_MS, to: c.ts + MATCH_AFTER_MS, ts: c.ts, provider: c.provider,
    alias: TWIN_PROVIDERS[c.provider]?.[0] ?? c.provider, alias2: TWIN_PROVIDERS[c.provider]?.[1] ?? c.provider,
    alias3: TWIN_PROVIDERS[c.provider]?.[2] ?? c.provider,
    input: c.usage.input_tokens, output: c.usage.output_tokens, rid: c.response_id ?? '',
  }
}

/**
 * Calls imported before take a larger usage their log now gives, or give way to the proxy's record
 * of the same answer (./grown.ts); the others were imported as they are. `rekey` then points the
 * import keys of each superseded call at the proxy's call (this machine's file).
 */
export async function complete(
  store: SqlStore, grown: readonly Grown[], opts: WriteOptions, stats: StoreStats, rekey: (s: readonly Superseded[]) => void,
  noticeMoved?: (id: number, delta: number, requests?: number) => void,
  noticeReclassed?: (id: number, delta: number, was: string) => void,
): Promise<void> {
  const done = await completeImported(store, grown, opts.pricer, opts.store ? opts.moveSpend : undefined, noticeMoved, noticeReclassed)
  const superseded = done?.superseded.length ?? 0
  stats.duplicates += grown.length - (done?.updated ?? 0) - (done?.reclassed ?? 0) - superseded
  if (!done) return
  // Once committed: should this write fail, the next read finds the call at 0 and its twin again.
  if (superseded) rekey(done.superseded)
  stats.updated += done.updated
  stats.reclassed += done.reclassed
  stats.superseded += superseded
  stats.cost_usd += done.delta
  opts.onMoved?.(done.moves)
}

/** Points the import keys of superseded imported calls at the proxy's calls that superseded them (in `db`, where the keys are). */
export function rekeyer(db: Database.Database): (s: readonly Superseded[]) => void {
  const move = db.prepare('UPDATE import_keys SET call_id = ? WHERE call_id = ?')
  return db.transaction((list: readonly Superseded[]) => {
    for (const { id, twin } of list) move.run(twin, id)
  })
}

/** What storedAsMatch reads of the ledger call a LoggedCall.storedAs key names. */
export interface StoredRow {
  session: string
  ts: number
  input_tokens: number
  output_tokens: number
}
export const STORED_ROW_COLUMNS = 'session, ts, input_tokens, output_tokens'

/**
 * Whether the ledger call a LoggedCall.storedAs key names is this logged call: any, unless the key
 * names a session. Then it is the call an earlier build stored from this log line (stamped at its
 * time, whatever session it was given: a Codex fork's own calls before they took the fork's), or
 * the proxy's record of it that build matched (that session, the call's counts). The session alone
 * does not tell: a Codex sub-agent forked with its parent's history is of its parent's session,
 * whose own call at the same running total is another call.
 */
export function storedAsMatch(row: StoredRow | undefined, s: StoredAs, c: LoggedCall): boolean {
  if (!row) return false
  if (s.session === undefined || Number(row.ts) === c.ts) return true
  return row.session === s.session && Number(row.input_tokens) === c.usage.input_tokens && Number(row.output_tokens) === c.usage.output_tokens
}

export function toRecord(c: LoggedCall, opts: WriteOptions): CallRecord {
  const u = c.usage
  // A charge the provider reported is the cost whether or not the call names its model (an xAI batch's image).
  const p = c.model || reportedUsd(u.provider_cost_usd) !== undefined ? opts.pricer.price(c.pricingId, c.provider, c.model, u, new Date(c.ts)) : { cost_usd: 0, priced: false }
  return {
    ts: c.ts,
    provider: c.provider,
    model: c.model,
    endpoint: c.endpoint,
    api_key_hash: c.who?.api_key_hash ?? '',
    key_hint: c.who?.key_hint ?? '',
    tenant: c.who?.tenant ?? opts.tenant ?? '',
    agent: c.who?.agent ?? opts.agent ?? '',
    session: c.session,
    status: 200,
    streamed: false,
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_tokens: u.cache_read_tokens,
    cache_write_tokens: u.cache_write_tokens,
    cache_write_1h_tokens: u.cache_write_1h_tokens,
    reasoning_tokens: u.reasoning_tokens,
    cost_usd: p.cost_usd,
    priced: p.priced,
    estimated: false,
    latency_ms: 0,
    error: null,
    response_id: c.response_id,
    source: c.who?.source ?? 'import',
    billing: c.who?.billing ?? c.billing ?? 'api',
    project: c.project,
    // Claude Code's logs count web searches (server_tool_use): kept, so re-pricing charges them again.
    usage_extra: usageExtra(u),
  }
}
