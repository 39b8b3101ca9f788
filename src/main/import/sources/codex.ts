import { basename, join } from 'node:path'
import { count, emptyUsage, type Usage } from '../../metering/usage'
import { PROVIDERS } from '../../providers/registry'
import { ZSTD, fileJsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'

/**
 * Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (and
 * `archived_sessions/`), compressed to `rollout-<time>-<id>.jsonl.zst` (zstd) once Codex no longer
 * writes to it (read decompressed; the same rollout plain and compressed is one, by its keys). `session_meta` names the session id and working directory,
 * `turn_context` the model, and each model response ends with an `event_msg` of type
 * `token_count` whose `info.last_token_usage` is that response's usage (`total_token_usage` the
 * running total, which also identifies the event; a repeated total is no new call).
 * With a ChatGPT login stored, `session_meta` names its account (`creator_account_id`, with
 * `creator_user_id`: Codex 0.171 writes them in a session's first line, and none when an API key
 * overrides the login, `CODEX_API_KEY`), whatever provider the session runs on: on Codex's own
 * OpenAI provider that login is what pays; on another `model_provider` (OpenRouter's, or one of
 * the user's own with an API key from `env_key`) that provider's key is, and the account says
 * nothing. The token_count events may carry the plan's `rate_limits` with its `plan_type` or its
 * windows' use (codex-rs RateLimitSnapshot, from headers only the ChatGPT backend sends, as a
 * provider of the user's own with `requires_openai_auth` reaches it; a real session on Codex's
 * own provider can have `rate_limits: null` throughout). Either makes the session's calls plan
 * usage, recorded as the proxy records them (provider `chatgpt`, `billing: "subscription"`, priced
 * as OpenAI's models: their API-equivalent value), never as API money. Known from the first line,
 * a session being written is never imported as money before a later event names its plan; an
 * older Codex writes no account there, and its calls imported before the event that names the
 * plan (a session read while being written) are re-classed when a later read finds it
 * (LoggedCall.reclass).
 */
export const codex: LogSource = {
  agent: 'codex',
  defaultRoots(env, home) {
    const dir = env.CODEX_HOME || join(home, '.codex')
    return [join(dir, 'sessions'), join(dir, 'archived_sessions')]
  },
  // Compressed once Codex no longer writes to it (`.jsonl.zst`; its `.jsonl.zst.compress.<n>.tmp` while under way is not one).
  isLog: (path) => basename(path).startsWith('rollout-') && (path.endsWith('.jsonl') || (ZSTD && path.endsWith('.jsonl.zst'))),
  // Oldest first, whatever its folder (Codex names a rollout by its start time, `rollout-<time>-<id>`; an archived one is in
  // archived_sessions/): a fork's copies of its parent's calls, stamped when the fork was made, are then its parent's, at their time.
  readOrder: (path) => basename(path).replace(/\.zst$/, ''),
  // Read a chunk at a time, as Claude Code's: a long session's rollout holds every tool output (../lines.ts).
  async read(path) {
    const counter = { skipped: 0 }
    const log = new CodexLog(basename(path).replace(/\.zst$/, '').replace(/\.jsonl$/, ''))
    for await (const line of fileJsonLines(path, counter)) log.add(line)
    return log.parsed(counter.skipped)
  },
}

function codexUsage(u: any): Usage {
  const out = emptyUsage()
  out.input_tokens = count(u.input_tokens)
  out.cache_read_tokens = Math.min(count(u.cached_input_tokens), out.input_tokens)
  out.output_tokens = count(u.output_tokens)
  out.reasoning_tokens = Math.min(count(u.reasoning_output_tokens), out.output_tokens)
  return out
}

/**
 * Whether a token_count's `rate_limits` are a ChatGPT plan's: a plan type, or a window's use (the
 * 5-hour and weekly windows Codex reads from the ChatGPT backend's x-codex-* headers, which
 * OpenAI's API never sends: Codex versions before plan_type wrote only those). On an API key
 * Codex writes `null`, or every field null.
 */
function planLimits(r: any): boolean {
  if (!r || typeof r !== 'object') return false
  if (str(r.plan_type)) return true
  return [r.primary, r.secondary].some((w) => w && typeof w === 'object' && typeof w.used_percent === 'number')
}

const OPENAI = { provider: 'openai', pricingId: 'openai' }

/** How long after a fork's copy of its parent's session_meta the copied lines are written by (all at once, in one flush). */
const COPY_WRITTEN_MS = 1000

/**
 * The provider a session runs on, from its `model_provider` (Codex's config id of it: `openai`,
 * or one of the user's, such as OpenRouter's documented `openrouter`), as Burnrate names and
 * prices it, and as the proxy records it through that provider's route: Burnrate's provider of
 * that name; else OpenAI's (Codex's own, and a provider of the user's own such as `burnrate`).
 */
function providerOf(id: string): { provider: string; pricingId: string } {
  const p = id && id !== 'openai' && id !== 'chatgpt' ? PROVIDERS.find((x) => x.name === id) : undefined
  return p ? { provider: p.name, pricingId: p.pricingId } : OPENAI
}

/** One rollout's calls, taken a line at a time. */
class CodexLog {
  private readonly calls: LoggedCall[] = []
  /** The calls that are a fork's copies of another thread's (not re-classed by this session's plan: LoggedCall.reclass). */
  private readonly copies = new Set<LoggedCall>()
  // One session, one login: a plan named by any of its events is every call's (the first event may carry no rate limits).
  private plan = false
  // session_meta named a stored ChatGPT login: the plan's only on Codex's own OpenAI provider (`openai`, or none named).
  private login = false
  private providerId = ''
  // The thread the file is (its key's part: each thread's running total starts at 0), and the
  // session it belongs to: a sub-agent's thread (review, spawned) names its session's `session_id`.
  private thread = ''
  private session = ''
  private metaSeen = false
  /** The file's own thread (its first session_meta's), and the threads whose session_meta it copies, nearest first (the root last). */
  private own = ''
  private readonly ancestors: string[] = []
  /** A fork's copy of its parent's session_meta: its session, and when the copy was written. */
  private copied: { session: string; at: number } | null = null
  private project = ''
  private model = ''
  private provider = OPENAI
  private lastTotal = -1
  private n = 0
  /** Calls logged without a time that can be read: bad lines. */
  private untimed = 0

  constructor(private readonly fileId: string) {}

  add(line: any): void {
    const p = line.payload
    if (!p || typeof p !== 'object') return
    if (line.type === 'session_meta') {
      if (str(p.creator_account_id)) this.login = true
      // A later session_meta is a fork's copy of its parent's (a forked history is written as it
      // was, before the fork's own turns): the copied token counts are the parent's calls, keyed
      // as its own rollout keys them; the session stays the file's own, its first line's.
      this.thread = str(p.id) || this.thread
      if (!this.metaSeen) {
        this.own = this.thread
        this.session = str(p.session_id) || str(p.id)
        this.project = str(p.cwd) || this.project
      } else {
        this.copied = { session: str(p.session_id) || str(p.id), at: timeOf(line.timestamp) }
        if (str(p.id)) this.ancestors.push(str(p.id))
      }
      this.metaSeen = true
      this.model = str(p.model) || this.model
      if (str(p.model_provider)) {
        this.providerId = str(p.model_provider)
        this.provider = providerOf(this.providerId)
      }
    } else if (line.type === 'turn_context') {
      this.model = str(p.model) || this.model
      this.project = str(p.cwd) || this.project
    } else if (line.type === 'event_msg' && p.type === 'token_count') {
      if (planLimits(p.rate_limits)) this.plan = true
      if (!p.info || typeof p.info !== 'object') return
      const total = p.info.total_token_usage
      const totalTokens = total ? count(total.total_tokens) || count(total.input_tokens) + count(total.output_tokens) : -1
      if (total && totalTokens === this.lastTotal) return // the same usage reported again
      const last = p.info.last_token_usage
      if (!last || typeof last !== 'object') return
      const usage = codexUsage(last)
      const ts = timeOf(line.timestamp)
      if (usage.input_tokens + usage.output_tokens === 0) return
      // A call without a time that can be read is a bad line, counted (dropped without a word, the summary said every line was read).
      if (!Number.isFinite(ts)) {
        this.untimed++
        return
      }
      this.lastTotal = totalTokens
      this.n++
      const n = totalTokens >= 0 ? totalTokens : `n${this.n}`
      const call: LoggedCall = {
        ...this.keysOf(n, ts),
        ts,
        ...this.provider,
        model: str(p.info.model) || this.model,
        session: this.sessionAt(ts),
        project: this.project,
        usage,
        response_id: '',
        endpoint: 'responses',
      }
      this.calls.push(call)
      if (this.isCopyOf(ts)) this.copies.add(call)
    }
  }

  /**
   * A call's keys, by its running total `n` (a thread's own: each starts at 0, and a fork's goes
   * on from its copy of its parent's). A fork's own call is its thread's, as a thread never forked
   * is: the parent may go on past the fork to the same total, another call. A copy is the call the
   * thread that logged it keyed: the nearest copied thread's own call first (a fork of a fork
   * copies its parent's own calls after the root's), then the root's, the key of the copies
   * (copies of copies). An earlier build keyed a fork's own calls as the root's (the last
   * session_meta read): found so, in the fork's session or at the call's time, it is stored already.
   */
  private keysOf(n: number | string, ts: number): Pick<LoggedCall, 'key' | 'storedAs'> {
    const root = this.thread || this.fileId
    if (!this.copied || !this.own || this.own === root) return { key: `codex:${root}:${n}` }
    if (this.isCopy(ts)) {
      const nearer = this.ancestors.slice(0, -1).filter((a) => a !== root)
      return { key: `codex:${root}:${n}`, ...(nearer.length ? { storedAs: nearer.map((a) => ({ key: `codex:${a}:${n}` })) } : {}) }
    }
    return { key: `codex:${this.own}:${n}`, storedAs: [{ key: `codex:${root}:${n}`, session: this.session }] }
  }

  /** Whether a token count logged at `ts` is a fork's copy of a call of another thread (keysOf's copies). */
  private isCopyOf(ts: number): boolean {
    return !!this.copied && !!this.own && this.own !== (this.thread || this.fileId) && this.isCopy(ts)
  }

  /** Whether a token count logged at `ts` is one of the copies a fork writes with its copy of its parent's session_meta (below). */
  private isCopy(ts: number): boolean {
    const c = this.copied
    return !!c && ts - c.at <= COPY_WRITTEN_MS
  }

  /**
   * The session of a token count logged at `ts`: the parent's for one of the copies a fork writes
   * with its copy of the parent's session_meta (Codex stamps each line as it writes it: the copy is
   * written at once, before any answer of the fork's own), else the file's own.
   */
  private sessionAt(ts: number): string {
    return this.copied?.session && this.isCopy(ts) ? this.copied.session : this.session
  }

  parsed(skipped: number): Parsed {
    if (this.plan || (this.login && (this.providerId === '' || this.providerId === 'openai'))) {
      for (const c of this.calls) {
        c.provider = 'chatgpt'
        c.billing = 'subscription'
        // Its own calls, imported as money before a later event named the plan, are re-classed; a fork's copies are its parent's.
        if (!this.copies.has(c)) c.reclass = true
      }
    }
    return { calls: this.calls, skipped: skipped + this.untimed }
  }
}
