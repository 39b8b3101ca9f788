import type { CallBilling } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import type { Usage } from '../metering/usage'

/** The agents whose own logs Burnrate can import. */
export const LOG_AGENTS = ['claude-code', 'codex', 'gemini-cli', 'opencode'] as const
export type LogAgent = (typeof LOG_AGENTS)[number]

/** One model call as an agent's log tells it. */
export interface LoggedCall {
  /** Unique for this call across imports (idempotency): the agent's own ids. */
  key: string
  /**
   * Another key of the same call, for an agent that copies its logged calls under new ids
   * (opencode's session fork copies every message, its tokens and time with it, under a new id):
   * found by either key, the call is stored once, under both.
   */
  alias?: string
  /**
   * Keys the call may already be stored under, looked up in turn before `key` (found by one, the
   * call is that ledger call, and nothing is stored under `key`): a Codex fork's copy of a call
   * its parent logged (the parent's key), or a call an earlier build keyed otherwise. With
   * `session`, only a ledger call of that session, or at this call's own time, is it.
   */
  storedAs?: StoredAs[]
  ts: number
  /**
   * When the log last wrote of this call, for a call logged over several lines as its answer
   * streams (Claude Code: one per content block, the early ones with a partial usage); `ts` when
   * absent. The settle wait (ImportOptions.settleMs) counts from it: the proxy records the call
   * only once its stream ends.
   */
  lastTs?: number
  /** Ledger provider name (`anthropic`, `openai`, `gemini`, ...) and its @pydantic/genai-prices id. */
  provider: string
  pricingId: string
  model: string
  session: string
  /** The working directory the log names, or ''. */
  project: string
  usage: Usage
  /** The provider's id of the answer when the log has it (Claude Code's `message.id`), else ''. */
  response_id: string
  endpoint: string
  /**
   * `subscription` when the log says the call was a plan's (Codex logged in with ChatGPT), as the
   * proxy records it; else money (`api`).
   */
  billing?: CallBilling
  /**
   * The log names the call a plan's (`billing: "subscription"`) by its own session's events: a
   * call stored before as money (read before a later event of its rollout named the plan) takes
   * the plan's provider and billing, as a first read of the whole log stores it (./grown.ts). Not
   * on a call the log copies from another session (a Codex fork's copies of its parent's), nor
   * ever on a call the proxy recorded.
   */
  reclass?: boolean
  /**
   * Who made it, when that is not the importing agent: a Batch API's requests, read from their
   * results file through the proxy, are the reading call's (its key, tenant, agent, billing),
   * `source: "proxy"`.
   */
  who?: Pick<CallRecord, 'api_key_hash' | 'key_hint' | 'tenant' | 'agent' | 'billing' | 'source'>
  /**
   * Matched to a call already in the ledger by its response id only, never by its tokens and
   * time (a batch's request never went through the proxy on its own, so a proxied call with
   * the same counts is another call).
   */
  matchByIdOnly?: boolean
}

export interface StoredAs {
  key: string
  session?: string
}

/** What one log file held: its calls, and the lines that could not be read (malformed or truncated). */
export interface Parsed {
  calls: LoggedCall[]
  skipped: number
}

/** One agent's log format: where its logs live and how a file is read. */
export interface LogSource {
  agent: LogAgent
  /** The folders read when no `--path` is given (the agent's config-dir variable first). */
  defaultRoots(env: NodeJS.ProcessEnv, home: string): string[]
  /**
   * The candidate files under a root, relative to it (default: every file below it, ./walk.ts);
   * a subfolder that cannot be read goes to `unreadable`, the others are listed.
   */
  list?(root: string, unreadable: (path: string) => void): Promise<string[]>
  /**
   * The key logs are read in, across every root (default: each root's in turn, by path): a log
   * whose calls another copies (a Codex fork copies its parent's) is read before the copy, wherever
   * it is, so its calls are stored with their own lines' times.
   */
  readOrder?(path: string): string
  /** Whether a file under a root is one of this agent's logs. */
  isLog(path: string): boolean
  /**
   * Files whose changes are changes of a log too, looked at with it to tell whether it changed
   * since the last import (a SQLite database's `-wal`, where its new rows sit until a checkpoint).
   */
  companions?(path: string): string[]
  /** Reads one log file. Never throws for bad content: unreadable lines are counted in `skipped`. */
  read(path: string, root: string): Promise<Parsed>
  /**
   * A reader of the logs under a root for one import run, when they are read with something read
   * once per run rather than per file (opencode's logins, from its auth.json). Default: `read`.
   */
  open?(root: string): Promise<(path: string) => Promise<Parsed>>
}
