import { readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { anthropicUsage } from '../../providers/anthropic'
import { jsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'

/**
 * Claude Code: `<config dir>/projects/<project>/<session>.jsonl` (and subagent files below it).
 * Each assistant line carries the API's `message` (`id`, `model`, `usage`), `requestId`,
 * `sessionId`, `cwd` and `timestamp`. One answer is written as several lines (one per content
 * block) with the same message id: it is one call, kept once with its largest usage.
 */
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
  async read(path) {
    return parseClaudeCode(await readFile(path, 'utf8'))
  },
}

export function parseClaudeCode(text: string): Parsed {
  const counter = { skipped: 0 }
  const byId = new Map<string, LoggedCall & { total: number; sidechain: boolean }>()
  const calls: LoggedCall[] = []
  for (const line of jsonLines(text, counter, (l) => l.includes('"usage"'))) {
    // Subagent progress lines nest the same entry under data.message.
    const e = line.message?.usage ? line : line.data?.message?.message?.usage ? line.data.message : null
    if (!e) continue
    const m = e.message
    const model = str(m.model)
    const ts = timeOf(e.timestamp)
    const usage = anthropicUsage(m.usage)
    if (!usage || !model || model === '<synthetic>' || !Number.isFinite(ts)) continue
    const id = str(m.id)
    const call = {
      key: id ? `claude-code:${id}` : `claude-code:${str(e.sessionId ?? line.sessionId)}:${str(e.uuid ?? line.uuid) || ts}`,
      ts,
      provider: 'anthropic',
      pricingId: 'anthropic',
      model,
      session: str(e.sessionId ?? line.sessionId),
      project: str(e.cwd ?? line.cwd),
      usage,
      response_id: id,
      endpoint: 'messages',
      total: usage.input_tokens + usage.output_tokens,
      sidechain: (e.isSidechain ?? line.isSidechain) === true,
    }
    const seen = id ? byId.get(id) : undefined
    if (!seen) {
      if (id) byId.set(id, call)
      calls.push(call)
    } else if ((seen.sidechain && !call.sidechain) || (seen.sidechain === call.sidechain && call.total > seen.total)) {
      Object.assign(seen, call, { ts: Math.min(seen.ts, call.ts) })
    }
  }
  return { calls: calls.map(({ total: _t, sidechain: _s, ...c }: any) => c as LoggedCall), skipped: counter.skipped }
}
