import { createHash } from 'node:crypto'
import type { PeriodClock } from '../time/zone'
import { SESSION_MEMORY_MS } from './meter'
import { matches } from './pattern'
import type { Rule } from './rules'

/** The fields a rule's scope is matched against. */
export interface Scope {
  provider: string
  model: string
  /** The model the request named, when known (a response may name a dated version of it). */
  requested?: string | null
  agent: string
  tenant: string
}

/** True when a call of `s` is in the rule's scope (provider, agent, tenant, and the model it answered or requested). */
export function scopeMatches(rule: Rule, s: Scope): boolean {
  if (rule.provider !== null && !matches(rule.provider, s.provider)) return false
  if (rule.agent !== null && !matches(rule.agent, s.agent)) return false
  if (rule.tenant !== null && !matches(rule.tenant, s.tenant)) return false
  if (rule.model_pattern !== null) {
    return matches(rule.model_pattern, s.model) || (typeof s.requested === 'string' && matches(rule.model_pattern, s.requested))
  }
  return true
}

/** True when the rule limits only some of a key's calls (a provider, model, agent or tenant). */
export function scoped(rule: Rule): boolean {
  return rule.provider !== null || rule.agent !== null || rule.tenant !== null || rule.model_pattern !== null
}

/** A rule's pattern and scope: the same rule across a reload, whatever else of it changed. */
export function ruleIdentity(r: Rule): string {
  return JSON.stringify([r.api_key_pattern, r.provider, r.model_pattern, r.agent, r.tenant])
}

/** A rule's pattern as kept on disk: hashed (a rule on one key names the whole key). */
export function keptPattern(pattern: string): string {
  return createHash('sha256').update(pattern).digest('hex')
}

/** `ruleIdentity` as the data folder keeps it (background holds): its pattern hashed. */
export function keptRuleIdentity(r: Rule): string {
  return JSON.stringify([keptPattern(r.api_key_pattern), r.provider, r.model_pattern, r.agent, r.tenant])
}

/**
 * With a session cap among `rules`: the start of the sessions whose whole spend the meters load
 * (those with a call since then, i.e. not idle for SESSION_MEMORY_MS), however long ago they
 * began; null without one.
 */
export function sessionHistoryStart(rules: readonly Rule[], now: number): number | null {
  return rules.some((r) => r.session_limit_usd !== null) ? now - SESSION_MEMORY_MS : null
}

/** The longest history any rule needs loaded: this month, this week, the longest window, a week of sessions. */
export function historyStart(rules: readonly Rule[], clock: PeriodClock, now: number): number {
  let since = Math.min(clock.monthOf(now).start, clock.weekOf(now).start)
  for (const r of rules) {
    if (r.window_hours !== null) since = Math.min(since, now - r.window_hours * 3600_000 - 60_000)
    if (r.session_limit_usd !== null) since = Math.min(since, now - SESSION_MEMORY_MS)
  }
  return since
}
