import { skipSpace } from '../metering/json-scan'

/**
 * The events of an OpenAI stream, by name, and the cheap checks on an event's raw text that let
 * the meter (./openai-meter.ts) leave most of a stream unparsed: which Responses events end a
 * response or stream text, which endpoints stream Chat Completions chunks, and whether a chunk may
 * hold a usage object. Nothing here keeps state; each check reads the text it is given once.
 */

/**
 * A failed response bills nothing, so its `usage: null` means zero. A completed one without
 * usage (an OpenAI-compatible server that sends none) is estimated instead.
 */
export const NOTHING_BILLED = new Set(['response.failed'])
/** The Responses API's terminal events: nothing follows them. */
export const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed'])
/** A response's terminal statuses (`status` of the Response object). */
export const DONE = new Set(['completed', 'incomplete', 'failed', 'cancelled'])

/** The Responses API's events that stream text: the only ones an estimate reads (the others' deltas are not used). */
export const TEXT_DELTAS = new Set([
  'response.output_text.delta',
  'response.function_call_arguments.delta',
  // A custom tool's input (Codex's apply_patch: the whole patch), a refusal, open reasoning text
  // (gpt-oss on Responses-compatible servers), and a reasoning summary: a floor for hidden
  // reasoning, which is billed as output and never streamed.
  'response.custom_tool_call_input.delta',
  'response.refusal.delta',
  'response.reasoning_text.delta',
  'response.reasoning_summary_text.delta',
  // The built-in tools' input as the model writes it: apply_patch's patch, the code interpreter's
  // code, an MCP tool call's arguments.
  'response.apply_patch_call_operation_diff.delta',
  'response.code_interpreter_call_code.delta',
  'response.mcp_call_arguments.delta',
])
/** The endpoints whose streams are Chat Completions chunks (`OpenAIMeter.deferrable`). */
export const CHUNKED = new Set(['chat.completions', 'completions', 'fim.completions'])

/**
 * Whether a Responses event, by its name (the SSE event's, or a WebSocket frame's type) and raw
 * text, carries neither the Response object nor a usage: an output item or part, or their
 * deltas (most of a stream's events). Nothing in one changes the result but a text delta's text
 * (`TEXT_DELTAS`). One that names a response or a usage is not passed over; nor is one with a
 * `\u` escape, which could spell either key.
 */
export function passesOver(name: string, data: string): boolean {
  return name.startsWith('response.') && !TERMINAL.has(name) && !data.includes('"response"') && !data.includes('"usage"') && !data.includes('\\u')
}

/**
 * Whether a chunk's text may hold a usage object: it names `"usage"` other than as `"usage":null`
 * (which OpenAI puts in every chunk of a stream that asked for usage). A `"usage"` inside a JSON
 * string is escaped (`\"usage\"`) and so never matches; a key spelled with `\u` escapes could
 * be `usage` without reading so, so any `\u` in the text says true; when unsure, true (the chunk
 * is parsed).
 */
export function mayCarryUsage(data: string): boolean {
  if (data.includes('\\u')) return true
  let i = data.indexOf('"usage"')
  while (i >= 0) {
    let j = skipSpace(data, i + 7)
    if (data.charCodeAt(j) !== 58 /* : */) return true
    j = skipSpace(data, j + 1)
    if (!data.startsWith('null', j)) return true
    i = data.indexOf('"usage"', j + 4)
  }
  return false
}

