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
const INPUT_TRANSCRIPTION = '"inputTranscription"'

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
 * Whether an unparsed `serverContent` message that is not the model's output begins a turn when
 * none is held: the transcription of the user's speech the model answers. The rest (the
 * transcription of the model's own speech, which can come after its turn ended,
 * `generationComplete`) goes with a turn and begins none.
 */
export function beginsContent(data: Buffer): boolean {
  return data.includes(INPUT_TRANSCRIPTION)
}

/**
 * Whether a parsed message begins a generation: the model's output, a tool call, or, when no turn
 * is held, the transcription of the user's speech it answers.
 */
export function beginsMessage(m: Record<string, unknown>, noTurnHeld: boolean): boolean {
  if (isObject(m.toolCall)) return true
  const sc = m.serverContent
  return isObject(sc) && (isObject(sc.modelTurn) || (noTurnHeld && isObject(sc.inputTranscription)))
}
