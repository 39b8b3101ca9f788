import { basename, dirname, join } from 'node:path'
import { fileJsonLines, timeOf } from '../lines'
import { fsError, vanished } from '../walk'

/**
 * A Claude Code subagent's login, from its session's transcript.
 *
 * Claude Code (2.1.3xx) writes a subagent's transcript apart,
 * `<project>/<session>/subagents/[…/]agent-<id>.jsonl`, and logs the subagent's requests
 * (`api-request`, with their beta flags: ./claude-code.ts) in it, but not those of an agent whose
 * transcript refers to its parent's conversation instead of copying it (a line
 * `"type":"fork-context-ref"`: a fork, `subagent_type: "fork"`, or a skill run with
 * `context: fork`). Such a transcript names no request: its calls were sent with its session's
 * login, which the session's own transcript, `<project>/<session>.jsonl`, logs.
 */

/** One request a session's transcript logged: its time, and whether it was sent with an OAuth token. */
export interface Login {
  ts: number
  oauth: boolean
}

/** The beta flag Claude Code sends only with an OAuth token (a Claude account's plan). */
export const OAUTH_BETA = 'oauth-2025-04-20'

/** The session's own transcript of a subagent's transcript (`…/<session>/subagents/…/agent-<id>.jsonl`), or null. */
export function parentSessionLog(path: string): string | null {
  if (!basename(path).startsWith('agent-')) return null
  for (let dir = dirname(path); dirname(dir) !== dir; dir = dirname(dir)) {
    if (basename(dir) !== 'subagents') continue
    const session = dirname(dir)
    return dirname(session) === session ? null : join(dirname(session), `${basename(session)}.jsonl`)
  }
  return null
}

/**
 * The requests a session's transcript logged, in the order written; none when it is gone (its
 * subagents' calls are then money, as a log without requests is). One there that cannot be read
 * (no permission: one `sudo` left owned by root) throws its error: the subagent's transcript is
 * named as unreadable and read again at the next import, its calls never recorded as money on a
 * guess (recorded so, they stayed money once the session's transcript could be read).
 */
export async function sessionLogins(path: string): Promise<Login[]> {
  const out: Login[] = []
  try {
    for await (const line of fileJsonLines(path, { skipped: 0 }, ['"api-request"'])) {
      if (line.type !== 'api-request') continue
      const betas = line.params?.betas
      out.push({ ts: timeOf(line.timestamp), oauth: Array.isArray(betas) && betas.includes(OAUTH_BETA) })
    }
  } catch (err) {
    if (fsError(err) && !vanished(err)) throw err
    return []
  }
  return out
}

/**
 * Whether a subagent's call at `ts` was sent with an OAuth token: its session's one login, or,
 * the session having logged in both ways, the login of its latest request before the call (the
 * first one's when none is before it). No request logged: money.
 */
export function subagentLogin(session: readonly Login[], ts: number): boolean {
  if (session.length === 0) return false
  if (session.every((l) => l.oauth === session[0]!.oauth)) return session[0]!.oauth
  let at = session[0]!
  for (const l of session) if (l.ts <= ts) at = l
  return at.oauth
}
