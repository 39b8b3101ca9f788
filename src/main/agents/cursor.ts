import { isObject } from '../metering/usage'
import type { AgentSignature, ClientRequest } from './types'

/**
 * Cursor. With "Override OpenAI Base URL" its requests are sent by Cursor's backend, not the
 * editor, and Cursor documents no header for them. It is recognised by a `Cursor/` User-Agent
 * or an `x-cursor-*` header where present, and otherwise by the body its agent mode sends to
 * `/chat/completions`: Responses-style `input` items with its custom `ApplyPatch` grammar tool
 * (as captured by proxies that serve Cursor, e.g. archestra-ai/archestra#7375).
 */
export const cursor: AgentSignature = {
  name: 'cursor',
  matches: (r) => /\bCursor\//.test(r.ua) || hasCursorHeader(r) || hasApplyPatchTool(r),
}

function hasCursorHeader(r: ClientRequest): boolean {
  for (const name in r.headers) if (name.startsWith('x-cursor-')) return true
  return false
}

function hasApplyPatchTool(r: ClientRequest): boolean {
  const b = r.body
  if (!isObject(b) || !Array.isArray(b.tools)) return false
  return b.tools.some((t: unknown) => isObject(t) && t.type === 'custom' && t.name === 'ApplyPatch')
}
