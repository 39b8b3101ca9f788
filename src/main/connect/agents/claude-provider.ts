import type { ConfigDoc } from '../formats/types'
import { tildify } from '../paths'
import type { AgentFile, ConnectContext } from '../types'
import { underBurnrate } from './codex-provider'

/** Claude Code's reading of a variable that turns something on (its isEnvTruthy). */
const truthy = (v: string | undefined): boolean => v !== undefined && ['1', 'true', 'yes', 'on'].includes(v.trim().toLowerCase())

/**
 * The cloud platforms Claude Code calls instead of Anthropic's API when their variable is on, in
 * the order it checks them, and the address variable each reads in place of ANTHROPIC_BASE_URL.
 * Vertex AI's (ANTHROPIC_VERTEX_BASE_URL) is one Burnrate writes; Bedrock's names the region and
 * Foundry's needs the resource in Burnrate's config, so they are not written (./claude-code.ts).
 */
const PLATFORMS = [
  { use: 'CLAUDE_CODE_USE_BEDROCK', base: 'ANTHROPIC_BEDROCK_BASE_URL', name: 'Amazon Bedrock', path: '/bedrock/<your region>' },
  { use: 'CLAUDE_CODE_USE_VERTEX', base: null, name: 'Vertex AI', path: null },
  { use: 'CLAUDE_CODE_USE_FOUNDRY', base: 'ANTHROPIC_FOUNDRY_BASE_URL', name: 'Microsoft Foundry', path: '/foundry/anthropic' },
] as const

/**
 * Said when Claude Code runs on Amazon Bedrock or Microsoft Foundry (CLAUDE_CODE_USE_BEDROCK or
 * _FOUNDRY on, in its settings' `env` or, where that does not set it, the environment here): it
 * then reads neither address Burnrate writes and sends its calls to that platform directly, while
 * Burnrate shows it connected. Not when that platform's own address variable is this Burnrate's.
 * Null when its calls do go through Burnrate.
 */
export function claudeProviderNote(ctx: ConnectContext, f: AgentFile, doc: ConfigDoc, url: string): string | null {
  const env = f.env ?? ['env']
  const value = (name: string): { value: string | undefined; where: string } => {
    const v = doc.get([...env, name])
    if (v !== undefined) return { value: typeof v === 'string' ? v : JSON.stringify(v), where: `${[...env, name].join('.')} in ${tildify(ctx, f.path)}` }
    return { value: ctx.env[name], where: 'the environment here' }
  }
  for (const p of PLATFORMS) {
    const on = value(p.use)
    if (!truthy(on.value)) continue
    if (p.base === null || underBurnrate(value(p.base).value, url)) return null
    return (
      `${p.use} is on (${on.where}): Claude Code then calls ${p.name}, which reads neither ANTHROPIC_BASE_URL nor ANTHROPIC_VERTEX_BASE_URL, the addresses Burnrate sets, so it sends its calls to ${p.name} directly and Burnrate does not meter them. ` +
      `To meter them, set ${p.base}=${url}${p.path} beside it (README: Point your agents at it).`
    )
  }
  return null
}
