/** Keys remembered in all (every provider and model together); past this the memory starts again. */
export const FAST_KEYS = 10_000

/**
 * The keys (hashes) whose last call of a model that left its tier to the project
 * (`CallShape.projectTier`: OpenAI's or Azure OpenAI's, no `service_tier` or `auto`) was answered
 * at a fast tier: their project's default tier is Fast mode (./expected.ts, `CallHistory.servedFast`).
 * Bounded in total, not per model: at most FAST_KEYS keys, each model kept only while it has one;
 * a key forgotten when the memory starts again is reserved at the standard price until its next
 * such call is answered fast again.
 */
export class FastKeys {
  /** By provider, then model (two lookups: no key string built per call). */
  private readonly providers = new Map<string, Map<string, Set<string>>>()
  private count = 0

  /** A call of key `hash` that left its tier to the project was answered at a fast tier (`fast`) or not. */
  note(provider: string, model: string, hash: string, fast: boolean): void {
    let models = this.providers.get(provider)
    let keys = models?.get(model)
    if (!fast) {
      if (!keys?.delete(hash)) return
      this.count--
      if (keys.size > 0) return
      models!.delete(model)
      if (models!.size === 0) this.providers.delete(provider)
      return
    }
    if (keys?.has(hash)) return
    if (this.count >= FAST_KEYS) {
      this.providers.clear()
      this.count = 0
      models = undefined
      keys = undefined
    }
    if (!models) {
      models = new Map()
      this.providers.set(provider, models)
    }
    if (!keys) {
      keys = new Set()
      models.set(model, keys)
    }
    keys.add(hash)
    this.count++
  }

  has(provider: string, model: string, hash: string): boolean {
    return this.providers.get(provider)?.get(model)?.has(hash) === true
  }

  /** How many keys are remembered, over every provider and model. */
  get size(): number {
    return this.count
  }
}
