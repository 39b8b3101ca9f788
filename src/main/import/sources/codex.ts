import { readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { count, emptyUsage, type Usage } from '../../metering/usage'
import { jsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'

/**
 * Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (and
 * `archived_sessions/`). `session_meta` names the session id and working directory,
 * `turn_context` the model, and each model response ends with an `event_msg` of type
 * `token_count` whose `info.last_token_usage` is that response's usage (`total_token_usage` the
 * running total, which also identifies the event; a repeated total is no new call).
 * Logged in with ChatGPT, `session_meta` names the login's account (`creator_account_id`, with
 * `creator_user_id`: Codex 0.171 writes them in a session's first line, and none when the session
 * runs on an API key, even with a ChatGPT login stored beside it), and the token_count events may
 * carry the plan's `rate_limits` with its `plan_type` or its windows' use (codex-rs
 * RateLimitSnapshot; a real session can have `rate_limits: null` throughout). Either makes the
 * session's calls plan usage, recorded as the proxy records them (provider `chatgpt`, `billing:
 * "subscription"`, priced as OpenAI's models: their API-equivalent value), never as API money.
 * Known from the first line, a session being written is never imported as money before a later
 * event names its plan.
 */
export const codex: LogSource = {
  agent: 'codex',
  defaultRoots(env, home) {
    const dir = env.CODEX_HOME || join(home, '.codex')
    return [join(dir, 'sessions'), join(dir, 'archived_sessions')]
  },
  isLog: (path) => basename(path).startsWith('rollout-') && path.endsWith('.jsonl'),
  async read(path) {
    return parseCodex(await readFile(path, 'utf8'), basename(path, '.jsonl'))
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

export function parseCodex(text: string, fileId: string): Parsed {
  const counter = { skipped: 0 }
  const calls: LoggedCall[] = []
  // One session, one login: a plan named by any of its events is every call's (the first event may carry no rate limits).
  let plan = false
  // The thread the file is (its key's part: each thread's running total starts at 0), and the
  // session it belongs to: a sub-agent's thread (review, spawned) names its session's `session_id`.
  let thread = ''
  let session = ''
  let project = ''
  let model = ''
  let lastTotal = -1
  let n = 0
  for (const line of jsonLines(text, counter)) {
    const p = line.payload
    if (!p || typeof p !== 'object') continue
    if (line.type === 'session_meta') {
      if (str(p.creator_account_id)) plan = true
      thread = str(p.id) || thread
      session = str(p.session_id) || str(p.id) || session
      project = str(p.cwd) || project
      model = str(p.model) || model
    } else if (line.type === 'turn_context') {
      model = str(p.model) || model
      project = str(p.cwd) || project
    } else if (line.type === 'event_msg' && p.type === 'token_count') {
      if (planLimits(p.rate_limits)) plan = true
      if (!p.info || typeof p.info !== 'object') continue
      const total = p.info.total_token_usage
      const totalTokens = total ? count(total.total_tokens) || count(total.input_tokens) + count(total.output_tokens) : -1
      if (total && totalTokens === lastTotal) continue // the same usage reported again
      const last = p.info.last_token_usage
      if (!last || typeof last !== 'object') continue
      const usage = codexUsage(last)
      const ts = timeOf(line.timestamp)
      if (usage.input_tokens + usage.output_tokens === 0 || !Number.isFinite(ts)) continue
      lastTotal = totalTokens
      n++
      calls.push({
        key: `codex:${thread || fileId}:${totalTokens >= 0 ? totalTokens : `n${n}`}`,
        ts,
        provider: 'openai',
        pricingId: 'openai',
        model: str(p.info.model) || model,
        session,
        project,
        usage,
        response_id: '',
        endpoint: 'responses',
      })
    }
  }
  if (plan) {
    for (const c of calls) {
      c.provider = 'chatgpt'
      c.billing = 'subscription'
    }
  }
  return { calls, skipped: counter.skipped }
}
