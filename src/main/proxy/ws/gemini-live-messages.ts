import { isObject } from '../../metering/usage'

/**
 * What a Gemini Live API server message is, for its socket's calls (./gemini-live-calls.ts), read
 * from its bytes where it need not be parsed (base64 audio never holds a `"`, and a key named so
 * inside a string is escaped, `\"`), or from the parsed message where it was.
 */

/** Bytes only a server message that ends a turn, or bills one, holds. */
export const USAGE = '"usageMetadata"'
export const TURN_COMPLETE = '"turnComplete"'
export const TOOL_CALL = '"toolCall"'
const CONTENT = '"serverContent"'
const MODEL_TURN = '"modelTurn"'
const INTERRUPTED = '"interrupted"'

/**
 * An unparsed message's `serverContent`: whether it has one, whether that is the model's output
 * (`modelTurn`, found at an audio frame's start), and whether it may say the model was
 * interrupted (searched only in the small messages that are not output; parse to be sure).
 */
export function contentKind(data: Buffer): { content: boolean; output: boolean; interrupted: boolean } {
  const content = data.includes(CONTENT)
  const output = content && data.includes(MODEL_TURN)
  return { content, output, interrupted: content && !output && data.includes(INTERRUPTED) }
}

/**
 * Whether a parsed message begins a generation: the model's output or a tool call. Not a
 * transcription, of the user's speech or of the model's: Google sends them with no order to the
 * turn, so one can come after the turn it belongs to was recorded.
 */
export function beginsMessage(m: Record<string, unknown>): boolean {
  if (isObject(m.toolCall)) return true
  const sc = m.serverContent
  return isObject(sc) && isObject(sc.modelTurn)
}
