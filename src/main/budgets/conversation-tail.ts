import { createHash } from 'node:crypto'
import { withoutCallIds } from './call-ids'

/**
 * The end of a conversation, as the runaway detector (./runaway.ts) compares calls by it: a hash
 * of its last two messages (tool call ids left out), computed without escaping big tool results,
 * and the conversation's length.
 */

/**
 * Messages a tail is taken from: OpenAI chat and Anthropic `messages`, Responses `input`, Gemini
 * `contents`, and Gemini Code Assist's `request.contents` (Gemini's request, wrapped).
 */
function conversation(body: unknown): unknown[] | null {
  if (typeof body !== 'object' || body === null) return null
  const b = body as Record<string, unknown>
  for (const k of ['messages', 'input', 'contents']) if (Array.isArray(b[k])) return b[k] as unknown[]
  const wrapped = b.request as Record<string, unknown> | null | undefined
  if (typeof wrapped === 'object' && wrapped !== null && Array.isArray(wrapped.contents)) return wrapped.contents as unknown[]
  return null
}

/** The hash of a conversation's last two messages, or null when it has fewer than three (one-shot calls are never loops). */
export function tailHash(body: unknown): string | null {
  return tailOf(body)?.hash ?? null
}

/**
 * A conversation's tail hash and its length in messages (a loop's grows with every turn; a resend's
 * does not). `work.scanned` is increased by the values the look for long strings went through.
 */
export function tailOf(body: unknown, work?: { scanned: number }): { hash: string; length: number } | null {
  const msgs = conversation(body)
  if (!msgs || msgs.length < 3) return null
  // The ids of tool calls are fresh every turn, even in a loop: they are no part of what repeats.
  const tail = withoutCallIds(msgs.slice(-2))
  const h = createHash('sha256')
  const w = new TailText(h)
  try {
    w.value(tail, 0)
    w.flush()
  } catch (err) {
    if (err !== TOO_DEEP && err !== TOO_BIG) throw err
    // Nested deeper, or more parts, than the walk goes through: its JSON text, as it always was
    // (which may throw, as it did). `J` starts no text the walk writes (a tail's starts with `[`).
    return { hash: createHash('sha256').update('J').update(JSON.stringify(tail)).digest('base64url'), length: msgs.length }
  } finally {
    if (work) work.scanned += w.look.scanned
  }
  return { hash: h.digest('base64url'), length: msgs.length }
}

/** Nesting the walk goes to; deeper tails are hashed from their JSON text (tailHash). */
const MAX_DEPTH = 256
const TOO_DEEP = new Error('nested too deep')
/**
 * Values other than long strings all the looks for long strings in one tail go through (each at
 * most twice: a tail of 8,192 such values never needs more); a tail that needs more is hashed from
 * its JSON text, which JSON.stringify makes in one step however many parts it has.
 */
const WALK = 16_384
const TOO_BIG = new Error('too many parts')
/** Strings longer than this go to the hash on their own; shorter text is gathered first. */
const DIRECT = 4096

/**
 * Writes a JSON value (as JSON.parse makes them) into a hash as its JSON text (JSON.stringify's),
 * except that each long, well-formed string is written as `#` + its length + `:` + the string
 * itself, not escaped: escaping a big tool result's quotes and newlines was most of the hash's
 * time. Two values get the same text exactly when their JSON texts are the same (the length says
 * where such a string ends; `#` starts no JSON value). Parts without a long string are written
 * by JSON.stringify in one step.
 */
class TailText {
  private text = ''
  readonly look = new LongLook()
  constructor(private readonly h: ReturnType<typeof createHash>) {}

  flush(): void {
    if (this.text) this.h.update(this.text)
    this.text = ''
  }

  private put(s: string): void {
    this.text += s
    if (this.text.length > 16384) this.flush()
  }

  value(v: unknown, depth: number): void {
    if (depth > MAX_DEPTH) throw TOO_DEEP
    if (!this.look.hasLong(v)) {
      this.put(JSON.stringify(v) ?? 'null')
    } else if (typeof v === 'string') {
      if ((v as unknown as { isWellFormed(): boolean }).isWellFormed()) {
        this.put(`#${v.length}:`)
        this.flush()
        this.h.update(v)
      } else {
        // UTF-8 cannot carry a lone surrogate: its JSON text, as for any string.
        this.put(JSON.stringify(v))
      }
    } else if (Array.isArray(v)) {
      this.put('[')
      for (let i = 0; i < v.length; i++) {
        if (i > 0) this.put(',')
        this.value(v[i], depth + 1)
      }
      this.put(']')
    } else {
      this.put('{')
      let first = true
      for (const k of Object.keys(v as object)) {
        const x = (v as Record<string, unknown>)[k]
        if (omitted(x)) continue
        if (!first) this.put(',')
        first = false
        this.put(JSON.stringify(k))
        this.put(':')
        this.value(x, depth + 1)
      }
      this.put('}')
    }
  }
}

/** An object's values JSON.stringify leaves out, with their keys. */
function omitted(x: unknown): boolean {
  return x === undefined || typeof x === 'function' || typeof x === 'symbol'
}

/** Values a look for a long string goes through before it gives up (LongLook.hasLong). */
const SCAN = 256

/**
 * Whether a long string (DIRECT characters or more) is among the first SCAN values of a JSON value,
 * depth first: a tail of thousands of small parts is written by JSON.stringify in one step rather
 * than looked through at every level. A function of the value alone, as the text must be.
 *
 * TailText asks this of every value it goes down to, so each look remembers the arrays and objects
 * it went through on the way to the long string it found: each holds that string among its own
 * first SCAN values (it is fewer values from them), so the answer for them is known. Without that,
 * arrays nested a few hundred deep with a long string at the bottom were gone through again from
 * every level (a 9 MB body ~342 ms of the event loop). Now each value is gone through at most twice:
 * by the look that passes it and, if it holds no long string, by its own before it is written whole.
 * All the looks of one tail go through WALK values at most, long strings aside (then TOO_BIG):
 * TailText goes down only to values a look has answered, so its own walk is bounded with them, and
 * a long string followed by millions of small values (each written on its own) is no longer ~5
 * times JSON.parse's time. Long strings are not counted: each is DIRECT characters of the body.
 */
class LongLook {
  /** Values gone through (for tests: the work is bounded by the tail's size). */
  scanned = 0
  private readonly holding = new Set<object>()
  /** The arrays and objects from where the current look started down to the value it is at. */
  private readonly path: object[] = []
  private left = 0
  private total = WALK

  hasLong(v: unknown): boolean {
    if (typeof v === 'object' && v !== null && this.holding.has(v)) return true
    this.left = SCAN
    this.path.length = 0
    if (!this.scan(v)) return false
    for (const o of this.path) this.holding.add(o)
    return true
  }

  private scan(v: unknown): boolean {
    this.scanned++
    if (--this.left < 0) return false
    if (typeof v === 'string' && v.length >= DIRECT) return true
    // A long string is DIRECT characters of body, hashed anyway: only the other values are bounded.
    if (--this.total < 0) throw TOO_BIG
    if (typeof v !== 'object' || v === null) return false
    this.path.push(v)
    const array = Array.isArray(v)
    for (const x of array ? v : Object.values(v)) {
      // Not in an object's JSON text (a tool call id withoutCallIds left out): not counted either.
      if (!array && omitted(x)) continue
      if (this.scan(x) || this.left < 0) return this.left >= 0
    }
    this.path.pop()
    return false
  }
}
