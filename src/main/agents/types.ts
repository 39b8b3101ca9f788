import type { IncomingHttpHeaders } from 'node:http'
import { isObject } from '../metering/usage'

/** What a client sent that may identify it: its headers and its parsed JSON body. */
export interface ClientRequest {
  headers: IncomingHttpHeaders
  /** The User-Agent, trimmed ('' when absent). */
  ua: string
  /** The parsed JSON request body (undefined when there is none or it is not JSON). */
  body: unknown
}

/** One known client: how to recognise it and where it puts its own session id. */
export interface AgentSignature {
  /** The name recorded as the call's agent, e.g. `claude-code`. */
  name: string
  matches(req: ClientRequest): boolean
  /** The client's own session or conversation id, '' when it sent none. */
  session?(req: ClientRequest): string
  /** The working directory the client states in its request (its project), '' when none. */
  project?(req: ClientRequest): string
}

/** A stated working directory worth keeping: one line, at most 500 characters; else ''. */
export function projectPath(v: string): string {
  const s = v.trim()
  return s.length > 0 && s.length <= 500 && !/[\r\n\0]/.test(s) ? s : ''
}

/** The text after `label` up to the end of its line, looked for in the first `limit` characters of `text`. */
export function lineAfter(text: string, label: string, limit = 200_000): string {
  const at = text.indexOf(label)
  if (at < 0 || at > limit) return ''
  const start = at + label.length
  const end = text.indexOf('\n', start)
  return text.slice(start, end < 0 ? Math.min(text.length, start + 501) : Math.min(end, start + 501))
}

/**
 * The working directory an agent states (`Primary working directory: /path` or `Working
 * directory: /path`) in `content`, a string or its first 8 text blocks (or strings), else ''. Any
 * block with a `text` counts: Anthropic's and OpenAI's content parts, Gemini's `parts`.
 */
export function workingDirectoryIn(content: unknown): string {
  const blocks = typeof content === 'string' ? [content] : content
  if (!Array.isArray(blocks)) return ''
  for (const b of blocks.slice(0, 8)) {
    const t = typeof b === 'string' ? b : isObject(b) ? b.text : undefined
    if (typeof t !== 'string') continue
    const p = projectPath(lineAfter(t, 'Primary working directory: ')) || projectPath(lineAfter(t, 'Working directory: '))
    if (p) return p
  }
  return ''
}

export function header(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name]
  return typeof v === 'string' ? v.trim() : Array.isArray(v) ? (v[0] ?? '').trim() : ''
}

/**
 * A header a person fills in (`X-Burnrate-Tenant`, `-Agent`, `-Session`, `-Project`) as its
 * sender meant it. Node reads a header's bytes as Latin-1, while curl, Go, Rust and Python's
 * httpx send a non-ASCII value as UTF-8 (`café` arrived as `cafÃ©`, and a budget rule scoped to
 * the tenant `café` never matched it): bytes that make valid UTF-8 are read as UTF-8, any other
 * (a Latin-1 sender's) as they came.
 */
export function labelHeader(headers: IncomingHttpHeaders, name: string): string {
  const v = header(headers, name)
  if (!/[\x80-\xff]/.test(v)) return v
  const text = Buffer.from(v, 'latin1').toString('utf8')
  return text.includes('\ufffd') ? v : text
}

/** A session id worth keeping: printable, no spaces, at most 200 characters; else ''. */
export function sessionId(v: unknown): string {
  if (typeof v !== 'string') return ''
  const s = v.trim()
  return s.length > 0 && s.length <= 200 && /^[\x21-\x7e]+$/.test(s) ? s : ''
}

/**
 * The text of a request's first system prompt, wherever its wire format puts it: Anthropic's
 * `system`, Gemini's and Vertex AI's `system_instruction.parts`, or a leading chat message of role
 * `system` (its first text block); else ''.
 */
export function firstSystemText(r: ClientRequest): string {
  const b = r.body
  if (!isObject(b)) return ''
  if (typeof b.system === 'string') return b.system
  if (Array.isArray(b.system) && isObject(b.system[0]) && typeof b.system[0].text === 'string') return b.system[0].text
  const gemini = b.system_instruction ?? b.systemInstruction
  if (isObject(gemini) && Array.isArray(gemini.parts) && isObject(gemini.parts[0]) && typeof gemini.parts[0].text === 'string') {
    return gemini.parts[0].text
  }
  const first = Array.isArray(b.messages) ? b.messages[0] : undefined
  if (!isObject(first) || first.role !== 'system') return ''
  if (typeof first.content === 'string') return first.content
  if (Array.isArray(first.content) && isObject(first.content[0]) && typeof first.content[0].text === 'string') {
    return first.content[0].text
  }
  return ''
}
