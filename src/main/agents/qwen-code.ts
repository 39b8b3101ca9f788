import { isObject } from '../metering/usage'
import { claudeUserId } from './claude-code'
import { type AgentSignature, type ClientRequest, firstSystemText, header, lineAfter, projectPath, sessionId } from './types'

/**
 * Qwen Code (QwenLM/qwen-code) sends `User-Agent: QwenCode/<version> (<platform>; <arch>)` to an
 * OpenAI-compatible API. To an Anthropic-compatible one other than api.anthropic.com (Burnrate's
 * address) it sends Claude Code's `User-Agent: claude-cli/<its own version> (external, cli)` and
 * `x-app: cli` (0.24, anthropicContentGenerator's buildHeaders), so builds before this one
 * recorded those calls as Claude Code's. It is told from Claude Code by what Claude Code always
 * sends and it never does (a session id in `metadata.user_id` or `X-Claude-Code-Session-Id`)
 * together with its own: its system prompt ("You are Qwen Code"), or one of its tools, whose names
 * Claude Code's never take (its side calls, such as the memory extractor's, have another prompt).
 * It sends no session id of its own; its `customHeaders` can (README: `${session_id}` in
 * `X-Burnrate-Session`).
 */
export const qwenCode: AgentSignature = {
  name: 'qwen-code',
  matches: (r) => /^QwenCode\//.test(r.ua) || (/^claude-cli\//i.test(r.ua) && !claudeCodeSession(r) && qwenBody(r)),
  // Its first user message opens with context blocks, one of them "This is the Qwen Code. … I'm
  // currently working in the directory: /path" (0.24); its side calls repeat the conversation.
  project: (r) => {
    const messages = isObject(r.body) && Array.isArray(r.body.messages) ? r.body.messages : []
    const first = messages.slice(0, 4).find((m) => isObject(m) && m.role === 'user')
    const content = isObject(first) ? first.content : undefined
    const blocks = typeof content === 'string' ? [content] : Array.isArray(content) ? content.slice(0, 8) : []
    for (const b of blocks) {
      const p = projectPath(lineAfter(typeof b === 'string' ? b : isObject(b) && typeof b.text === 'string' ? b.text : '', WORKING_DIRECTORY))
      if (p) return p
    }
    return ''
  },
}

const WORKING_DIRECTORY = "I'm currently working in the directory: "

/** Tools only Qwen Code offers under these names (Claude Code's are Read, Bash, Grep, Write...). */
const QWEN_TOOLS = new Set(['read_file', 'write_file', 'grep_search', 'run_shell_command', 'list_directory'])

function qwenBody(r: ClientRequest): boolean {
  if (/^You are Qwen Code\b/.test(firstSystemText(r))) return true
  const tools = isObject(r.body) ? r.body.tools : undefined
  return Array.isArray(tools) && tools.slice(0, 100).some((t) => isObject(t) && typeof t.name === 'string' && QWEN_TOOLS.has(t.name))
}

function claudeCodeSession(r: ClientRequest): boolean {
  return sessionId(claudeUserId(r.body).session) !== '' || header(r.headers, 'x-claude-code-session-id') !== ''
}
