import { readFile } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { geminiUsage } from '../../providers/gemini'
import { jsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'

/**
 * Gemini CLI: `~/.gemini/tmp/<project>/chats/session-*.jsonl` (older versions: one `.json`
 * document). The first record names `sessionId`; each `gemini` message has `id`, `timestamp`,
 * `model` and `tokens` {input, output, cached, thoughts, tool} from the API's usageMetadata. A
 * message is appended again when it changes, so its last copy counts. The project folder's
 * `.project_root` file names the working directory.
 */
export const geminiCli: LogSource = {
  agent: 'gemini-cli',
  defaultRoots(env, home) {
    return [join(env.GEMINI_CLI_HOME || home, '.gemini', 'tmp')]
  },
  isLog: (path) => path.includes(`${sep}chats${sep}`) && (path.endsWith('.jsonl') || path.endsWith('.json')),
  async read(path, root) {
    const text = await readFile(path, 'utf8')
    const projectDir = relative(root, path).split(sep)[0]
    const project = await readFile(join(root, projectDir, '.project_root'), 'utf8').then(
      (s) => s.trim(),
      () => '',
    )
    return parseGeminiCli(text, project, path.endsWith('.json'))
  },
}

export function parseGeminiCli(text: string, project: string, whole = false): Parsed {
  const counter = { skipped: 0 }
  let records: any[]
  if (whole) {
    try {
      const doc = JSON.parse(text)
      records = [doc, ...(Array.isArray(doc?.messages) ? doc.messages : [])]
    } catch {
      return { calls: [], skipped: 1 }
    }
  } else {
    records = [...jsonLines(text, counter)]
  }
  let session = ''
  const byId = new Map<string, LoggedCall>()
  for (const r of records) {
    if (typeof r?.sessionId === 'string' && r.sessionId) session = r.sessionId
    const msgs = Array.isArray(r?.$set?.messages) ? r.$set.messages : [r]
    for (const m of msgs) {
      if (m?.type !== 'gemini' || !m.tokens || typeof m.tokens !== 'object' || !str(m.id)) continue
      const t = m.tokens
      const usage = geminiUsage({
        promptTokenCount: t.input,
        candidatesTokenCount: t.output,
        cachedContentTokenCount: t.cached,
        thoughtsTokenCount: t.thoughts,
        toolUsePromptTokenCount: t.tool,
      })
      const ts = timeOf(m.timestamp)
      if (!usage || usage.input_tokens + usage.output_tokens === 0 || !Number.isFinite(ts)) continue
      byId.set(m.id, {
        key: `gemini-cli:${session}:${m.id}`,
        ts,
        provider: 'gemini',
        pricingId: 'google',
        model: str(m.model),
        session,
        project,
        usage,
        response_id: '',
        endpoint: 'generateContent',
      })
    }
  }
  return { calls: [...byId.values()], skipped: counter.skipped }
}
