import { AGENT_PROXY_VARS, agentProxyFor } from '../http/network'
import { noProxyEntries, noProxyLines } from '../../shared/no-proxy'
import { dotted } from './doc'
import type { ConfigDoc } from './formats/types'
import { tildify } from './paths'
import type { AgentConnector, AgentFile, ConnectContext } from './types'

/** What a plan warns of: settings elsewhere that would send the agent's calls around Burnrate. */

/**
 * A proxy the agent's own settings give it (Claude Code's `env` block, Gemini CLI's env file),
 * where NO_PROXY there does not exempt Burnrate's address: its calls would go to that proxy and
 * be stranded there, as with one set in the shell (proxyNotes). Null when there is none, or the
 * shell's already says so.
 */
export function settingsProxyNote(ctx: ConnectContext, c: AgentConnector, f: AgentFile, doc: ConfigDoc, url: string): string | null {
  const env = f.env
  if (!env) return null
  const fileEnv: NodeJS.ProcessEnv = {}
  for (const name of [...AGENT_PROXY_VARS, 'NO_PROXY', 'no_proxy']) {
    const v = doc.get([...env, name])
    if (typeof v === 'string') fileEnv[name] = v
  }
  const name = agentProxyFor(url, { ...ctx.env, ...fileEnv })
  if (!name || fileEnv[name] === undefined) return null
  const where = env.length === 0 ? tildify(ctx, f.path) : `${dotted(env)} in ${tildify(ctx, f.path)}`
  return `${name} is set for ${c.name} (${where}) and NO_PROXY there does not list ${new URL(url).hostname}: its calls for ${url} would go to that proxy, which cannot reach this machine. Add NO_PROXY=${noProxyEntries(url)} beside it.`
}

/**
 * An env file's variable already set otherwise in the environment here: the agent keeps the
 * shell's value (Gemini CLI, like dotenv, loads a variable from its .env only when the
 * environment lacks it), so the line Burnrate writes has no effect in an agent started from
 * that shell, and its calls would go elsewhere, unmetered. Null when there is none.
 */
export function shellWinsNote(ctx: ConnectContext, c: AgentConnector, f: AgentFile, url: string): string | null {
  if (f.env?.length !== 0) return null
  const set = f.settings.filter((s) => s.key.length === 1 && ctx.env[s.key[0]] !== undefined && ctx.env[s.key[0]] !== s.value).map((s) => s.key[0])
  if (set.length === 0) return null
  const names = set.join(', ')
  return `${names} ${set.length === 1 ? 'is' : 'are'} set here to another address: ${c.name} started from this shell keeps ${set.length === 1 ? 'that value' : 'those values'} over ${tildify(ctx, f.path)}'s, so its calls for ${url} would not go through Burnrate. Unset ${names} in the shell (or profile) you start ${c.name} from.`
}

/**
 * A proxy variable set here that NO_PROXY does not exempt Burnrate's address from: the agent
 * would send its calls to the proxy, which cannot reach this machine, and be stranded there
 * (the real CLIs, tried: Claude Code exits 1, Codex keeps reconnecting). What to add, said once.
 */
export function proxyNotes(who: string, url: string, ctx: ConnectContext): string[] {
  const name = agentProxyFor(url, ctx.env)
  if (!name) return []
  const host = new URL(url).hostname
  const how = ctx.platform === 'win32' ? `add ${noProxyEntries(url)} to the NO_PROXY environment variable` : `${noProxyLines(url, ctx.platform).replace('\n', '; ')} in the shell (or profile) you start it from`
  return [`${name} is set here and NO_PROXY does not list ${host}: calls from ${who} for ${url} would go to that proxy, which cannot reach this machine. Before starting ${who}, ${how}.`]
}
