import { isObject } from '../metering/usage'

/**
 * Which charges beyond its tokens a request's tools may bring (`expected` reservations learn them
 * apart for each kind, ./expected.ts): `none` for a request naming no billed tool; `billed` for one
 * naming a tool that may be billed per use (a web or file search, an image tool, Google Search, a
 * Claude server tool: any but the functions the client runs itself, OpenAI's `function` and
 * `custom` tools, Anthropic's untyped ones with their `input_schema`, Gemini's
 * `functionDeclarations`); `advisor` for one naming Claude's
 * advisor tool (`advisor_20260301`, whatever else it names), whose consultations another model
 * runs at its own rates: often several times the call's own tokens, far beyond a search's fee.
 */
export type ToolKind = 'none' | 'billed' | 'advisor'

/** The request's kind (see above), in one step over its `tools`. */
export function toolKind(body: unknown): ToolKind {
  if (!isObject(body) || !Array.isArray(body.tools)) return 'none'
  let kind: ToolKind = 'none'
  for (const t of body.tools) {
    if (!isObject(t) || clientTool(t)) continue
    if (typeof t.type === 'string' && t.type.startsWith('advisor_')) return 'advisor'
    kind = 'billed'
  }
  return kind
}

function clientTool(t: Record<string, unknown>): boolean {
  if (t.type === 'function' || t.type === 'custom') return true
  return t.type === undefined && ('input_schema' in t || 'functionDeclarations' in t || 'function_declarations' in t)
}
