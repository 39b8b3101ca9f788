import { closingQuote, skipSpace } from '../../metering/json-scan'

/**
 * A client's WebSocket frame that names a key Burnrate reads twice at its top level (`{"type":"x","type":"response.create"}`):
 * JSON.parse keeps the last value, a parser upstream may keep the first or refuse the frame, so
 * the budgets could gate another frame than the one the upstream acts on. Such a frame is found
 * without parsing it again: its keys are only read when its bytes hold a key the budgets and
 * meters read more than once (a `response.create` names `"type"` in its input items too), or a
 * JSON `\u` escape (which may spell a key).
 */

/** Keys whose second naming is looked for: by name, and as they stand in a frame's bytes (`"type"`). */
export interface Watched {
  names: ReadonlySet<string>
  quoted: readonly string[]
}

export function watched(keys: readonly string[]): Watched {
  return { names: new Set(keys), quoted: keys.map((k) => `"${k}"`) }
}

/** The top-level keys Burnrate reads of a client frame on a Responses or Realtime socket: what it is gated, priced and routed by. */
export const WATCHED = watched(['type', 'model', 'service_tier', 'previous_response_id', 'stream_id', 'event_id', 'input', 'instructions', 'tools', 'reasoning', 'max_output_tokens', 'background', 'prompt_cache_key', 'response'])

/**
 * The first of the `keys` named twice at the top level of `text`, a frame JSON.parse read as an
 * object, as the upstream's parser reads it (escapes decoded), or (`depth` 2) in an object that is
 * a value there (a Gemini Live `setup`); null when none is (or `text` is no object).
 */
export function duplicatedKey(text: string, keys: Watched = WATCHED, depth = 1): string | null {
  if (!mayRepeat(text, keys.quoted)) return null
  const i = skipSpace(text, 0)
  return text.charCodeAt(i) === OPEN_OBJECT ? inObject(text, i, keys.names, depth).twice : null
}

/** The object at `i`: the first of `names` named twice in it (or, `depth` past 1, in the objects it holds), and where it ends. */
function inObject(text: string, i: number, names: ReadonlySet<string>, depth: number): { twice: string | null; end: number } {
  const seen = new Set<string>()
  i = skipSpace(text, i + 1)
  while (text.charCodeAt(i) === QUOTE) {
    const end = stringEnd(text, i)
    const raw = text.slice(i + 1, end - 1)
    const key: string = raw.includes('\\') ? JSON.parse(text.slice(i, end)) : raw
    if (seen.has(key) && names.has(key)) return { twice: key, end }
    seen.add(key)
    // The `:`, the value, then a `,` and the next key (or the `}`).
    const v = skipSpace(text, skipSpace(text, end) + 1)
    if (depth > 1 && text.charCodeAt(v) === OPEN_OBJECT) {
      const inner = inObject(text, v, names, depth - 1)
      if (inner.twice !== null) return inner
      i = skipSpace(text, inner.end)
    } else i = skipSpace(text, skipValue(text, v))
    if (text.charCodeAt(i) !== COMMA) break
    i = skipSpace(text, i + 1)
  }
  return { twice: null, end: i + 1 }
}

function mayRepeat(text: string, watched: readonly string[]): boolean {
  if (text.includes('\\u')) return true
  for (const k of watched) {
    const at = text.indexOf(k)
    if (at >= 0 && text.indexOf(k, at + k.length) >= 0) return true
  }
  return false
}

const QUOTE = 0x22
const COMMA = 0x2c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d

/** Past the string that begins at `i` (its opening quote); the text's end when it is not closed. */
function stringEnd(text: string, i: number): number {
  const q = closingQuote(text, i)
  return q < 0 ? text.length : q + 1
}

/** Past the value that begins at `i`: a string, an object or an array (with all it holds), or a number or literal. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i)
  if (c === QUOTE) return stringEnd(text, i)
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0
    while (i < text.length) {
      const d = text.charCodeAt(i)
      if (d === QUOTE) {
        i = stringEnd(text, i)
        continue
      }
      if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++
      else if ((d === CLOSE_OBJECT || d === CLOSE_ARRAY) && --depth === 0) return i + 1
      i++
    }
    return i
  }
  while (i < text.length) {
    const d = text.charCodeAt(i)
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || d === 0x20 || d === 0x09 || d === 0x0a || d === 0x0d) return i
    i++
  }
  return i
}

/** The message a frame refused for a key named twice is answered with. */
export function duplicatedKeyMessage(key: string): string {
  return `Burnrate refuses a frame that names its "${key}" key more than once (the provider's parser may read another of its values than the budgets would); it was not sent upstream.`
}
