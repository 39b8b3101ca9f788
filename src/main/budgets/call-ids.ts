/**
 * A conversation's messages without the ids that tie a tool call to its result. The provider
 * gives every tool call a fresh id (Anthropic `toolu_…`, OpenAI `call_…`, Gemini's
 * `functionCall.id`) and the result repeats it, so an agent stuck running the same command on the
 * same error never sends the same tail twice, word for word (README: Runaway agents). Only those
 * fields go, where each API puts them: an `id` inside a tool's own input stays. Objects and arrays
 * are copied only where a field goes; the rest are the caller's own.
 */
export function withoutCallIds(messages: unknown[]): unknown[] {
  return mapSame(messages, message)
}

type Obj = Record<string, unknown>

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function message(m: unknown): unknown {
  if (!isObj(m)) return m
  let out = m
  // Responses input items: function_call / function_call_output, custom_tool_call(_output), local_shell_call, …
  if (typeof m.type === 'string' && /_call(_output)?$/.test(m.type)) out = drop(out, 'id', 'call_id')
  // OpenAI chat: the assistant's tool_calls[].id, answered by a tool message's tool_call_id.
  if (m.role === 'tool') out = drop(out, 'tool_call_id')
  if (Array.isArray(m.tool_calls)) out = put(out, 'tool_calls', mapSame(m.tool_calls, (c) => (isObj(c) ? drop(c, 'id') : c)))
  // Anthropic content blocks (tool_use / server_tool_use / mcp_tool_use, and their *tool_result).
  if (Array.isArray(m.content)) out = put(out, 'content', mapSame(m.content, block))
  // Gemini parts (functionCall.id, answered by functionResponse.id).
  if (Array.isArray(m.parts)) out = put(out, 'parts', mapSame(m.parts, part))
  return out
}

function block(b: unknown): unknown {
  if (!isObj(b) || typeof b.type !== 'string') return b
  if (b.type.endsWith('tool_use')) return drop(b, 'id')
  if (b.type.endsWith('tool_result')) return drop(b, 'tool_use_id')
  return b
}

function part(p: unknown): unknown {
  if (!isObj(p)) return p
  let out = p
  for (const k of ['functionCall', 'functionResponse']) {
    const f = p[k]
    if (isObj(f)) out = put(out, k, drop(f, 'id'))
  }
  return out
}

/** `o` with `keys` left out (as undefined: no JSON text, the other keys in their order), or `o` itself when it has none of them. */
function drop(o: Obj, ...keys: string[]): Obj {
  if (!keys.some((k) => o[k] !== undefined)) return o
  const c = { ...o }
  for (const k of keys) c[k] = undefined
  return c
}

/** `o` with `k` set to `v`, or `o` itself when it already has that value. */
function put(o: Obj, k: string, v: unknown): Obj {
  return o[k] === v ? o : { ...o, [k]: v }
}

/** `a` mapped through `f`, or `a` itself when `f` changed none of its items. */
function mapSame(a: unknown[], f: (x: unknown) => unknown): unknown[] {
  let out: unknown[] | null = null
  for (let i = 0; i < a.length; i++) {
    const x = f(a[i])
    if (x !== a[i] && !out) out = a.slice(0, i)
    if (out) out.push(x)
  }
  return out ?? a
}
