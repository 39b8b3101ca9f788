import { createHash } from 'node:crypto'
import { tailOf } from './conversation-tail'

/**
 * The tail of a Responses turn that continues a stored response (`previous_response_id`: Codex's
 * later turns on its WebSocket, the Agents SDK). Its `input` holds only what is new since that
 * response (a tool's output, often one item), not the conversation, so its own last two messages
 * are no tail: fewer than three, it was never counted, and a Codex agent calling the same tool
 * and getting the same output again and again was never found in a loop. Its tail is its input
 * after the input of the session's turn before it (the outputs of two calls in a row, as a
 * conversation's tail is a call and its output), with the size of the answer between them (its
 * output tokens without reasoning, when that answer was recorded here: a call the model makes again
 * word for word is as long each time, while answers to a person typing the same words are not).
 * Its place in the session's chain of turns is its length: a turn continuing another response is
 * a new turn; one continuing the same response as the turn before it is that turn sent again (a
 * retry), not another.
 */

/**
 * The session's last continued turn: the response it continued, the digests of its input's last
 * two items and of the turn's before it (digests, not the items: a session keeps no tool output),
 * and its place in the chain.
 */
export interface ContinuedTurn {
  previous: string
  before: string[]
  items: string[]
  length: number
}

/** Stands for what came before a session's first continued turn, so its tail has two messages. */
const START = { type: 'continued' }
const START_DIGEST = ''

/** Whether a request continues a stored response (a cheap test, before the session is looked up). */
export function continuesResponse(body: unknown): boolean {
  return typeof body === 'object' && body !== null && typeof (body as Record<string, unknown>).previous_response_id === 'string'
}

/** One input item's digest, as a conversation tail hashes it (tool call ids left out, long strings not escaped). */
function digest(item: unknown): string {
  return tailOf({ input: [START, START, item] })!.hash
}

/** A continued turn's tail and what the session remembers of it; null for a turn continuing no stored response. */
export function continuedTail(
  body: unknown,
  last: ContinuedTurn | undefined,
  /** The visible output tokens of a recorded answer, by its id. */
  answer: (id: string) => number | undefined = () => undefined,
): { hash: string; length: number; turn: ContinuedTurn } | null {
  if (typeof body !== 'object' || body === null) return null
  const b = body as Record<string, unknown>
  const previous = b.previous_response_id
  if (typeof previous !== 'string' || !previous) return null
  const input = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : Array.isArray(b.input) ? b.input : null
  if (!input || input.length === 0) return null
  // The same response continued again: this turn sent again, in the place it had.
  const again = last !== undefined && last.previous === previous
  const items = input.slice(-2).map(digest)
  const before = again ? last.before : (last?.items ?? [START_DIGEST])
  const length = again ? last.length : (last?.length ?? 0) + 1
  const h = createHash('sha256')
  for (const d of [...before, ...items].slice(-2)) h.update(d).update('\n')
  h.update(String(answer(previous) ?? ''))
  return { hash: h.digest('base64url'), length, turn: { previous, before, items, length } }
}

/** Answers remembered (the oldest forgotten first). */
const ANSWERS = 10_000

/** The visible output tokens of the latest Responses answers, by id, for the tails of the turns that continue them. */
export class AnswerSizes {
  private readonly sizes = new Map<string, number>()

  remember(id: string, outputTokens: number, reasoningTokens: number): void {
    if (this.sizes.size >= ANSWERS) this.sizes.delete(this.sizes.keys().next().value as string)
    this.sizes.set(id, Math.max(0, outputTokens - reasoningTokens))
  }

  readonly of = (id: string): number | undefined => this.sizes.get(id)
}
