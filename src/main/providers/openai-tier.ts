import type { Usage } from '../metering/usage'

/**
 * The tier that served an OpenAI (or Azure OpenAI) answer, as its `service_tier` names it (of a
 * JSON answer, a stream's chunks or its Response object), and what it costs: `flex` (Flex
 * processing) at Batch API rates, half of every token price (`Usage.batch`); `priority` or `fast`
 * (Fast mode, named Priority processing until July 2026) at the model's fast price (`Usage.fast`).
 * An answer that ends without its usage and without naming a tier (a stream cut before its first
 * event that names one) is taken to have the tier its request explicitly asked for; `auto`,
 * `default` or none asks for the project's default tier, which is not known here, so for none.
 */
export class ServiceTier {
  private flex = false
  private fast = false
  /** The answer named the tier that served it (any but `auto`, which names none yet). */
  private named = false

  /** `asked`: the request's `service_tier`. */
  constructor(private readonly asked: unknown) {}

  /** Notes the tier an answer (or a stream's chunk or Response) says served it. */
  note(tier: unknown): void {
    if (typeof tier !== 'string') return
    if (tier !== 'auto') this.named = true
    this.flex = tier === 'flex'
    this.fast = tier === 'priority' || tier === 'fast'
  }

  /** The usage the answer reported, as billed: marked at Batch API rates or at fast prices by the tier it named. */
  billed(u: Usage): Usage {
    if (this.flex) u.batch = true
    if (this.fast) u.fast = true
    return u
  }

  /** The marks of an answer without usage (its estimate's): the tier it named, else the one its request asked for; null for the standard tier. */
  marks(): Pick<Usage, 'fast' | 'batch'> | null {
    const fast = this.named ? this.fast : this.asked === 'priority' || this.asked === 'fast'
    const flex = this.named ? this.flex : this.asked === 'flex'
    if (fast) return { fast: true }
    return flex ? { batch: true } : null
  }
}
