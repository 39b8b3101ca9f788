import { basename, join } from 'node:path'
import { anthropicUsage } from '../../providers/anthropic-usage'
import { fileJsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'
import { type Login, OAUTH_BETA, parentSessionLog, sessionLogins, subagentLogin } from './claude-code-parent'

/**
 * Claude Code: `<config dir>/projects/<project>/<session>.jsonl` (and subagent files below it).
 * Each assistant line carries the API's `message` (`id`, `model`, `usage`), `requestId`,
 * `sessionId`, `cwd` and `timestamp`. One answer is written as several lines (one per content
 * block) with the same message id: it is one call, kept once with its largest usage.
 *
 * Logged in with a Claude account (Pro, Max, Team: an OAuth token), a call is plan usage, as the
 * proxy records it (`billing: "subscription"`, at its API-equivalent value), never API money.
 * Claude Code (2.1.3xx) logs each request before its answer (`type: "api-request"`, its `id`
 * named by the answer's `requestRef`, or `requestHookChanged.record` when a fetch hook changed
 * it) with the beta flags it sent, `params.betas`, and sends `oauth-2025-04-20` only with an
 * OAuth token. An answer whose request is not in its file takes the file's login when all its
 * requests had the same one; a subagent's transcript that logs no request of its own (a fork's:
 * ./claude-code-parent.ts) takes its session's; an older log that names none is money.
 */

/**
 * A Bedrock model id (`anthropic.claude-…`, a geographic or global inference profile
 * `us.anthropic.claude-…`, GovCloud's `us-gov.anthropic.claude-…`, which Claude Code sends and logs
 * in a `us-gov-` region, or an ARN): Claude Code on Amazon Bedrock, recorded and priced as the
 * proxy records its calls (provider `bedrock`, AWS's prices, the `invoke` endpoint).
 */
const BEDROCK_MODEL = /^(?:arn:aws[\w-]*:bedrock:|(?:[a-z]{2,6}(?:-[a-z]{2,6})?\.)?anthropic\.)/
export const claudeCode: LogSource = {
  agent: 'claude-code',
  defaultRoots(env, home) {
    if (env.CLAUDE_CONFIG_DIR) {
      return env.CLAUDE_CONFIG_DIR.split(',')
        .map((p) => p.trim())
        .filter(Boolean)
        .map((p) => (basename(p) === 'projects' ? p : join(p, 'projects')))
    }
    return [join(env.XDG_CONFIG_HOME || join(home, '.config'), 'claude', 'projects'), join(home, '.claude', 'projects')]
  },
  isLog: (path) => path.endsWith('.jsonl'),
  // A session's logins are read once per run, for all its subagents' transcripts.
  async open() {
    const sessions = new Map<string, Promise<Login[]>>()
    return (path) => readTranscript(path, (session) => {
      let logins = sessions.get(session)
      if (!logins) sessions.set(session, (logins = sessionLogins(session)))
      return logins
    })
  },
  read: (path) => readTranscript(path, sessionLogins),
}

/**
 * One transcript's calls, read a chunk at a time: a long session's transcript can pass 512 MiB
 * (../lines.ts). `logins`: the requests a session's own transcript logged, for a subagent's.
 */
async function readTranscript(path: string, logins: (session: string) => Promise<Login[]>): Promise<Parsed> {
  const counter = { skipped: 0 }
  const log = new ClaudeCodeLog()
  for await (const line of fileJsonLines(path, counter, MARKERS)) log.add(line)
  const session = log.loggedRequests ? null : parentSessionLog(path)
  return log.parsed(counter.skipped, session ? await logins(session) : [])
}

/** What a line must hold to be read: an answer's usage, or a logged request. */
const MARKERS = ['"usage"', '"api-request"']

/** One transcript's calls, taken a line at a time. */
class ClaudeCodeLog {
  private readonly byId = new Map<string, LoggedCall & { lastTs: number; total: number; sidechain: boolean; request: string }>()
  private readonly calls: (LoggedCall & { request: string })[] = []
  /** The logged requests by id: true when sent with an OAuth token (a Claude account's plan). */
  private readonly requests = new Map<string, boolean>()
  /** Calls logged without a time that can be read: bad lines. */
  private untimed = 0

  add(line: any): void {
    const { byId, calls, requests } = this
    if (line.type === 'api-request') {
      const betas = line.params?.betas
      if (str(line.id)) requests.set(str(line.id), Array.isArray(betas) && betas.includes(OAUTH_BETA))
      return
    }
    // Subagent progress lines nest the same entry under data.message.
    const e = line.message?.usage ? line : line.data?.message?.message?.usage ? line.data.message : null
    if (!e) return
    const m = e.message
    const model = str(m.model)
    const ts = timeOf(e.timestamp)
    const usage = anthropicUsage(m.usage)
    if (!usage || !model || model === '<synthetic>') return
    // A call without a time that can be read is a bad line, counted: dropped without a word, the summary said every line was read.
    if (!Number.isFinite(ts)) {
      this.untimed++
      return
    }
    const id = str(m.id)
    const bedrock = BEDROCK_MODEL.test(model)
    const call = {
      key: id ? `claude-code:${id}` : `claude-code:${str(e.sessionId ?? line.sessionId)}:${str(e.uuid ?? line.uuid) || ts}`,
      ts,
      lastTs: ts,
      provider: bedrock ? 'bedrock' : 'anthropic',
      pricingId: bedrock ? 'aws' : 'anthropic',
      model,
      session: str(e.sessionId ?? line.sessionId),
      project: str(e.cwd ?? line.cwd),
      usage,
      response_id: id,
      endpoint: bedrock ? 'invoke' : 'messages',
      total: usage.input_tokens + usage.output_tokens,
      sidechain: (e.isSidechain ?? line.isSidechain) === true,
      // A request a plugin's fetch hook changed is named by `requestHookChanged.record` instead.
      request: str(e.requestRef ?? line.requestRef) || str((e.requestHookChanged ?? line.requestHookChanged)?.record),
    }
    const seen = id ? byId.get(id) : undefined
    if (!seen) {
      if (id) byId.set(id, call)
      calls.push(call)
      return
    }
    // The answer's latest line, whichever usage is kept: the import waits from it (LoggedCall.lastTs).
    const lastTs = Math.max(seen.lastTs, ts)
    if ((seen.sidechain && !call.sidechain) || (seen.sidechain === call.sidechain && call.total > seen.total)) {
      Object.assign(seen, call, { ts: Math.min(seen.ts, call.ts) })
    }
    seen.lastTs = lastTs
  }

  /** Whether the transcript logged any request of its own. */
  get loggedRequests(): boolean {
    return this.requests.size > 0
  }

  /** `session`: its session's logged requests, taken when it logged none of its own (a subagent's). */
  parsed(skipped: number, session: readonly Login[] = []): Parsed {
    const { calls, requests } = this
    const logins = new Set(requests.values())
    const fileLogin = logins.size === 1 ? [...logins][0] : false
    for (const c of calls) {
      const oauth = requests.size > 0 ? (requests.get(c.request) ?? fileLogin) : subagentLogin(session, c.ts)
      if (oauth) c.billing = 'subscription'
    }
    return { calls: calls.map(({ total: _t, sidechain: _s, request: _r, ...c }: any) => c as LoggedCall), skipped: skipped + this.untimed }
  }
}
