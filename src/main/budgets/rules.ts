import { createHash } from 'node:crypto'
import type { BudgetAction, BudgetRuleOptions } from '../../shared/api'
import { bySpecificity, isPrefix, matches, prefixOf } from './pattern'

export type RuleSource = 'runtime' | 'config'

/** A budget rule as the engine uses it. */
export interface Rule extends BudgetRuleOptions {
  api_key_pattern: string
  daily_limit_usd: number | null
  monthly_limit_usd: number | null
  action: BudgetAction
  soft_limit_pct: number | null
  source: RuleSource
  /** When a runtime rule was stored (ms); null for config rules. */
  created_at: number | null
}

interface Origin {
  exact: Map<string, Rule>
  /** Exact patterns by the SHA-256 of the key, to resolve rules for a key known only by its hash. */
  exactByHash: Map<string, Rule>
  /** Prefix rules, longest prefix first. */
  prefixes: Rule[]
}

function buildOrigin(rules: readonly Rule[]): Origin {
  const o: Origin = { exact: new Map(), exactByHash: new Map(), prefixes: [] }
  for (const r of rules) {
    if (isPrefix(r.api_key_pattern)) o.prefixes.push(r)
    else {
      o.exact.set(r.api_key_pattern, r)
      o.exactByHash.set(createHash('sha256').update(r.api_key_pattern).digest('hex'), r)
    }
  }
  o.prefixes.sort((a, b) => bySpecificity(a.api_key_pattern, b.api_key_pattern))
  return o
}

let generations = 0

/**
 * An immutable snapshot of every rule, indexed for the hot path: which rule applies to a key
 * is one map lookup plus a walk over the prefix rules. Precedence (contract: Budget rules):
 * a runtime rule beats a config rule; within an origin an exact key beats any prefix and a
 * longer prefix beats a shorter one.
 */
export class RuleIndex {
  /** Changes with every new snapshot, so per-key memos know when to look again. */
  readonly generation = ++generations
  private readonly origins: Origin[]
  private readonly replaced: Set<string>
  private readonly inForce: Rule[]

  constructor(
    readonly runtime: readonly Rule[],
    readonly config: readonly Rule[],
  ) {
    this.origins = [buildOrigin(runtime), buildOrigin(config)]
    this.replaced = new Set(runtime.map((r) => r.api_key_pattern))
    this.inForce = [...runtime, ...config.filter((r) => !this.replaced.has(r.api_key_pattern))]
  }

  get empty(): boolean {
    return this.runtime.length === 0 && this.config.length === 0
  }

  /** The rule that applies to `key`, or null. */
  effective(key: string): Rule | null {
    for (const o of this.origins) {
      const exact = o.exact.get(key)
      if (exact) return exact
      for (const r of o.prefixes) if (matches(r.api_key_pattern, key)) return r
    }
    return null
  }

  /**
   * Every rule whose key pattern matches `key`, in precedence order; a config rule that a
   * runtime rule with the same pattern replaces is left out. The rule a call is under is the
   * first of these whose scope (model, provider, agent, tenant) matches the call.
   */
  candidates(key: string): Rule[] {
    const out: Rule[] = []
    const replaced = this.replaced
    for (const o of this.origins) {
      const exact = o.exact.get(key)
      if (exact && !(exact.source === 'config' && replaced.has(exact.api_key_pattern))) out.push(exact)
      for (const r of o.prefixes) {
        if (r.source === 'config' && replaced.has(r.api_key_pattern)) continue
        if (matches(r.api_key_pattern, key)) out.push(r)
      }
    }
    return out
  }

  /** Every rule in force (config rules that a runtime rule replaces are left out). */
  active(): readonly Rule[] {
    return this.inForce
  }

  /** Every prefix pattern that matches `key` (remembered per key hash, see `effectiveByHash`). */
  matchingPrefixes(key: string): string[] {
    const out: string[] = []
    for (const o of this.origins) for (const r of o.prefixes) if (matches(r.api_key_pattern, key)) out.push(r.api_key_pattern)
    return out
  }

  /**
   * The rule for a key known only by its hash and hint (listings, alerts: raw keys are never
   * kept). Exact rules match by hash and `*` matches every key; a longer prefix matches when the
   * key was seen matching it (`known`) or, for prefixes of up to 3 characters, from the hint.
   */
  effectiveByHash(hash: string, hint: string, known: ReadonlySet<string>): Rule | null {
    for (const o of this.origins) {
      const exact = o.exactByHash.get(hash)
      if (exact) return exact
      for (const r of o.prefixes) {
        const p = prefixOf(r.api_key_pattern)
        if (p === '' || known.has(r.api_key_pattern)) return r
        if (p.length <= 3 && hint.length > 1 && hint.startsWith(p)) return r
      }
    }
    return null
  }

  /** Every rule, sorted by pattern; a runtime rule comes before the config rule it overrides. */
  list(): { rule: Rule; overridden: boolean }[] {
    const runtimePatterns = new Set(this.runtime.map((r) => r.api_key_pattern))
    const all = [
      ...this.runtime.map((rule) => ({ rule, overridden: false })),
      ...this.config.map((rule) => ({ rule, overridden: runtimePatterns.has(rule.api_key_pattern) })),
    ]
    return all.sort((a, b) => {
      const x = a.rule.api_key_pattern
      const y = b.rule.api_key_pattern
      if (x !== y) return x < y ? -1 : 1
      return a.rule.source === b.rule.source ? 0 : a.rule.source === 'runtime' ? -1 : 1
    })
  }
}
