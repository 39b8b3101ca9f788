import { readFile } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { geminiUsage } from '../../providers/gemini'
import { fileJsonLines, str, timeOf } from '../lines'
import type { LogSource, LoggedCall } from '../types'

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
    const projectDir = relative(root, path).split(sep)[0]
    const project = await readFile(join(root, projectDir, '.project_root'), 'utf8').then(
      (s) => s.trim(),
      () => '',
    )
    const counter = { skipped: 0 }
    if (!path.endsWith('.json')) {
      // A chat's JSONL, read a chunk at a time as Claude Code's (../lines.ts): it keeps every tool output.
      const calls = await geminiCalls(fileJsonLines(path, counter), project, counter)
      return { calls, skipped: counter.skipped }
    }
    // A file that cannot be read throws (the importer names it and reads it again next time); only its content is a bad line.
    const text = await readFile(path, 'utf8')
    let records: any[]
    try {
      const doc = JSON.parse(text)
      records = [doc, ...(Array.isArray(doc?.messages) ? doc.messages : [])]
    } catch {
      return { calls: [], skipped: 1 }
    }
    return { calls: await geminiCalls(records, project, counter), skipped: counter.skipped }
  },
}

/** `counter`: a call without a time that can be read is a bad line, counted (dropped without a word, the summary said every line was read). */
async function geminiCalls(records: Iterable<any> | AsyncIterable<any>, project: string, counter: { skipped: number }): Promise<LoggedCall[]> {
  let session = ''
  const byId = new Map<string, LoggedCall>()
  for await (const r of records) {
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
      if (!usage || usage.input_tokens + usage.output_tokens === 0) continue
      if (!Number.isFinite(ts)) {
        counter.skipped++
        continue
      }
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
  return [...byId.values()]
}
