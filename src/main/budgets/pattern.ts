import { keyHint } from '../../shared/key-hint'

/**
 * Key patterns (contract: Budget rules): a whole API key, or a prefix followed by one trailing
 * `*` (`*` alone matches every key). The pattern is a rule's identity.
 */

/**
 * Longest pattern: far above any API key (a few hundred characters at most), and short enough
 * for PostgreSQL's index on the rule's identity (a pattern of several thousand characters failed
 * its insert as a 500).
 */
export const MAX_PATTERN_LENGTH = 1000

/** Why a pattern is not valid, or null when it is. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length === 0) return 'expected a non-empty string'
  if (pattern.length > MAX_PATTERN_LENGTH) return `expected at most ${MAX_PATTERN_LENGTH} characters (an API key is far shorter); got ${pattern.length}`
  if (looksLikeRegex(pattern)) {
    return `"${pattern.slice(0, 60)}" looks like a regular expression, but patterns are a whole key or a prefix followed by one "*" (e.g. "sk-dev-*")`
  }
  const star = pattern.indexOf('*')
  if (star !== -1 && star !== pattern.length - 1) return '"*" is only allowed once, at the end of the pattern'
  // API keys travel in HTTP headers, so a pattern outside visible ASCII can never match one.
  if (!/^[\x21-\x7e]+$/.test(pattern)) return 'expected visible ASCII characters only (no spaces)'
  return null
}

/**
 * Regular-expression syntax that API keys never contain: `^` at the start, `$` at the end,
 * `.+`/`.?`, `.*` after punctuation (`sk-.*`; `ya29.*` is a real prefix of Google tokens),
 * character classes, groups, alternation, escapes. (`+`, `/` and `=` alone can be part of a
 * base64 key, so they pass.)
 */
export function looksLikeRegex(pattern: string): boolean {
  return /^\^|\$$|\.[+?]|(^|[^A-Za-z0-9])\.\*|[[\]()|\\{}]/.test(pattern)
}

/**
 * How a rule is named wherever its pattern is shown (answers to the agent, alerts, logs): a prefix
 * as written, a whole key by its hint, never the raw key (agents write API errors to disk).
 */
export function shownPattern(pattern: string): string {
  return isPrefix(pattern) ? pattern : keyHint(pattern)
}

export function isPrefix(pattern: string): boolean {
  return pattern.endsWith('*')
}

/** The prefix a `*` pattern stands for ('' for `*`). */
export function prefixOf(pattern: string): string {
  return pattern.slice(0, -1)
}

export function matches(pattern: string, key: string): boolean {
  return isPrefix(pattern) ? key.startsWith(prefixOf(pattern)) : key === pattern
}

/**
 * Orders patterns most specific first: an exact key before any prefix, a longer prefix before
 * a shorter one. Negative when `a` is more specific than `b`.
 */
export function bySpecificity(a: string, b: string): number {
  const pa = isPrefix(a)
  const pb = isPrefix(b)
  if (pa !== pb) return pa ? 1 : -1
  if (!pa) return 0
  return b.length - a.length
}
