import { isObject } from '../../metering/usage'

/**
 * What a Gemini Live API server message is, for its socket's calls (./gemini-live-calls.ts), read
 * from its bytes where it need not be parsed (base64 audio never holds a `"`, and a key named so
 * inside a string is escaped, `\"`), or from the parsed message where it was.
 */

/** Bytes only a server message that ends a turn, or bills one, holds. */
export const USAGE = '"usageMetadata"'
export const TURN_COMPLETE = '"turnComplete"'
export const CONTENT = '"serverContent"'
export const TOOL_CALL = '"toolCall"'
const MODEL_TURN = '"modelTurn"'
const INPUT_TRANSCRIPTION = '"inputTranscription"'

/**
 * Whether an unparsed `serverContent` message begins a generation: the model's output
 * (`modelTurn`, found at an audio frame's start), or, when no turn is held, the transcription of
 * the user's speech it answers. The rest (the transcription of the model's own speech, which can
 * come after its turn ended, `generationComplete`) goes with a turn and begins none.
 */
export function beginsContent(data: Buffer, noTurnHeld: boolean): boolean {
  return data.includes(MODEL_TURN) || (noTurnHeld && data.includes(INPUT_TRANSCRIPTION))
}

/** The same, of a parsed message: its `toolCall` begins a generation too. */
export function beginsMessage(m: Record<string, unknown>, noTurnHeld: boolean): boolean {
  if (isObject(m.toolCall)) return true
  const sc = m.serverContent
  return isObject(sc) && (isObject(sc.modelTurn) || (noTurnHeld && isObject(sc.inputTranscription)))
}
