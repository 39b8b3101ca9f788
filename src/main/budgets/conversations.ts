import type { LearntUsage } from './types'

/**
 * What the conversation behind a Responses answer will cost as the prompt of a turn that continues
 * it (`previous_response_id`), for the reservations of such turns (./expected.ts, ./worst-case.ts):
 * the turn's body holds only what is new, and it is billed for the whole conversation.
 *
 * Kept per answered Responses call that had an id: its prompt tokens plus its output tokens (the
 * next turn's prompt holds both: an answer's `input_tokens` are its whole conversation), and the
 * part of them its prompt read from the cache. A reservation prices them at the continuing call's
 * own model, tier and data residency: the cache reads at the cache-read rate, the rest as
 * uncached input (`expected`: the discount as it really was on the last turn; the answer's
 * output was never cached), or all of them as uncached input (`max_tokens`: a bound). A cost per
 * token taken from the last turn would carry that turn's model and tier into the next, and could
 * not say which part is cached when a bound needs none of it.
 *
 * Bounded: the last CAPACITY answers, in a ring (a continued turn names the latest answer of its
 * conversation, so the oldest go first). One Map entry and two numbers per answer; nothing is
 * allocated per lookup. In memory, per instance: after a restart, or for an answer another
 * PostgreSQL instance saw, a turn reserves its body alone, as before.
 */
export const CAPACITY = 10_000

export class ConversationMemory {
  private readonly slots = new Map<string, number>()
  private readonly ids: (string | undefined)[]
  /** Per slot: the prompt and output tokens of the answer. */
  private readonly tokens: Float64Array
  /** Per slot: the part of them its prompt read from the cache. */
  private readonly cached: Float64Array
  private next = 0

  constructor(private readonly capacity = CAPACITY) {
    this.ids = new Array<string | undefined>(capacity)
    this.tokens = new Float64Array(capacity)
    this.cached = new Float64Array(capacity)
  }

  /**
   * An answered call of id `id` (its recorded usage), and what its prompt carried besides its
   * counts (`before`, `beforeCached`: a cut turn's counts are its body's estimate, without the
   * conversation it continued).
   */
  remember(id: string, usage: Pick<LearntUsage, 'input_tokens' | 'output_tokens' | 'cache_read_tokens'>, before = 0, beforeCached = 0): void {
    const carried = before + usage.input_tokens + usage.output_tokens
    if (!(carried > 0) || !Number.isFinite(carried)) return
    const at = this.next
    const old = this.ids[at]
    // The oldest answer goes (unless its id was answered again since, in a newer slot).
    if (old !== undefined && this.slots.get(old) === at) this.slots.delete(old)
    this.ids[at] = id
    this.tokens[at] = carried
    this.cached[at] = beforeCached + Math.min(Math.max(usage.cache_read_tokens, 0), usage.input_tokens)
    this.slots.set(id, at)
    this.next = (at + 1) % this.capacity
  }

  /** The slot of the answer a request continues (its `previous_response_id`), or -1. */
  find(body: unknown): number {
    if (body === null || typeof body !== 'object') return -1
    const id = (body as Record<string, unknown>).previous_response_id
    if (typeof id !== 'string' || id === '') return -1
    return this.slots.get(id) ?? -1
  }

  /** The tokens a continuing turn's prompt carries from the answer in `slot` (0 for -1). */
  carriedTokens(slot: number): number {
    return slot < 0 ? 0 : this.tokens[slot]
  }

  /** The part of `carriedTokens` that answer's prompt read from the cache (0 for -1). */
  carriedCached(slot: number): number {
    return slot < 0 ? 0 : this.cached[slot]
  }

  get size(): number {
    return this.slots.size
  }
}
