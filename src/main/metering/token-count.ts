/**
 * Token counting with a hard bound on time, for estimates (./estimate.ts). A BPE tokenizer's
 * time grows with the square of one pre-token's length, and degenerate model output is one
 * huge pre-token (a run of `=`, spaces, newlines, `hahaha...`): 128 KB of `=` took 10 s in one
 * call. So the text is counted in pieces of at most `PIECE_CHARS` characters, cut at a word
 * boundary where there is one (so normal text counts exactly as it would whole), and only the
 * first `EXACT_CHARS` characters of a text are counted; the rest is extrapolated at the rate
 * of the part counted. Time is then linear in the text and bounded per call.
 *
 * Pure functions: the same code runs on the estimate thread (./estimate-worker.ts) and, where
 * there is no thread, on the main thread a slice at a time (./estimator.ts).
 */

export type EncodingName = 'o200k_base' | 'cl100k_base'
export type Count = (text: string) => number

/** Longest piece given to the tokenizer at once: a piece costs well under a millisecond. */
export const PIECE_CHARS = 256
/** Characters of one text counted exactly; past this, the rate of the counted part is used. */
export const EXACT_CHARS = 1_000_000
/** Tokens per character when nothing could be counted (English prose is about 4 characters a token). */
export const CHARS_PER_TOKEN = 4

/** A text to count: the first `EXACT_CHARS` (or fewer) characters of it, and its whole length. */
export interface Sample {
  text: string
  total: number
}

export function sampleOf(text: string): Sample {
  return { text: text.length > EXACT_CHARS ? text.slice(0, EXACT_CHARS) : text, total: text.length }
}

/** Texts joined with '\n', as one sample: copies at most `EXACT_CHARS` characters however large they are. */
export function sampleOfJoined(texts: readonly string[]): Sample {
  let total = Math.max(0, texts.length - 1)
  for (const t of texts) total += t.length
  if (total <= EXACT_CHARS) return { text: texts.join('\n'), total }
  const parts: string[] = []
  let room = EXACT_CHARS
  for (const t of texts) {
    if (room <= 0) break
    const part = t.length > room ? t.slice(0, room) : t
    parts.push(part)
    room -= part.length + 1
  }
  return { text: parts.join('\n'), total }
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x3000 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029
}

/**
 * Where the piece starting at `start` ends. Prefers the last space that follows a non-space
 * in the second half of the window: that is a pre-token boundary in both o200k and cl100k
 * (words, numbers and punctuation never take a space after them), so cutting there changes
 * nothing. Else the last space of any kind, else a hard cut (never inside a surrogate pair).
 */
export function pieceEnd(text: string, start: number, max = PIECE_CHARS): number {
  const limit = start + max
  if (limit >= text.length) return text.length
  const floor = start + (max >> 1)
  let anySpace = -1
  for (let i = limit; i > floor; i--) {
    const c = text.charCodeAt(i)
    if (!isSpace(c)) continue
    if (c === 32 && !isSpace(text.charCodeAt(i - 1))) return i
    if (anySpace < 0) anySpace = i
  }
  if (anySpace > 0) return anySpace
  const last = text.charCodeAt(limit - 1)
  return last >= 0xd800 && last <= 0xdbff ? limit - 1 : limit
}

/**
 * Counts one sample piece by piece; `step` does at most `budgetMs` of work (at least one
 * piece), so a caller on the main thread can yield between steps.
 */
export class PieceCounter {
  private pos = 0
  private tokens = 0

  constructor(
    private readonly count: Count,
    private readonly sample: Sample,
  ) {}

  get done(): boolean {
    return this.pos >= this.sample.text.length
  }

  /** Counts pieces until done or `budgetMs` have passed. True when done. */
  step(budgetMs = Infinity): boolean {
    const text = this.sample.text
    const deadline = budgetMs === Infinity ? Infinity : performance.now() + budgetMs
    while (this.pos < text.length) {
      const end = pieceEnd(text, this.pos)
      this.tokens += this.count(text.slice(this.pos, end))
      this.pos = end
      if (performance.now() >= deadline) break
    }
    return this.done
  }

  /** Tokens of the whole text: counted, plus the uncounted rest at the counted part's rate. */
  result(): number {
    const { total } = this.sample
    if (total === 0) return 0
    if (this.pos === 0) return Math.ceil(total / CHARS_PER_TOKEN)
    return Math.ceil(this.tokens + ((total - this.pos) * this.tokens) / this.pos)
  }
}

/** Counts a whole sample at once (on the estimate thread). */
export function countSample(count: Count, sample: Sample): number {
  const c = new PieceCounter(count, sample)
  c.step()
  return c.result()
}

/** The encoding gpt-tokenizer has for a model's family. */
export function encodingFor(model: string): EncodingName {
  return /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d|chatgpt-4o|gpt-oss|codex)/i.test(model.replace(/^.*\//, '')) ? 'o200k_base' : 'cl100k_base'
}

/**
 * Models of other families have their own tokenizers, which gpt-tokenizer does not have; they
 * are counted with cl100k_base, scaled by how many more tokens the family's tokenizer makes
 * of the same text. Claude: x1.2, measured on the Anthropic recordings in test/fixtures
 * (their prose: cl100k 168 and 189 tokens where Claude billed 201 and 221). Others: x1.
 */
const FAMILY_FACTORS: [RegExp, number][] = [[/claude/i, 1.2]]

export function familyFactor(model: string): number {
  return FAMILY_FACTORS.find(([re]) => re.test(model))?.[1] ?? 1
}

/**
 * gpt-tokenizer's counter for an encoding. Text that looks like a special token
 * (`<|endoftext|>` in a prompt about tokenizers) is counted as the text it is, not refused.
 */
export async function loadCount(encoding: EncodingName): Promise<Count> {
  const m = encoding === 'o200k_base' ? await import('gpt-tokenizer/encoding/o200k_base') : await import('gpt-tokenizer/encoding/cl100k_base')
  const plain = { disallowedSpecial: new Set<string>() }
  return (t: string) => m.countTokens(t, plain)
}
