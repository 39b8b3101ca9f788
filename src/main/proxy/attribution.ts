import { hash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { matches } from '../budgets/pattern'
import type { CredentialSource } from '../providers/types'
import { keyHint } from '../../shared/key-hint'
import { labelHeader } from '../agents/types'
import { bearerCredential } from '../security/secrets'

/** Every place a request can carry an API key, in the order used when the provider names none. */
const ALL_SOURCES: readonly CredentialSource[] = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'query-key']
/** What OpenAI and the OpenAI-compatible APIs bill: the bearer token. */
const DEFAULT_BILLED: readonly CredentialSource[] = ['authorization']

function read(source: CredentialSource, headers: IncomingHttpHeaders, query: string, out: string[]): void {
  const add = (k: string) => {
    if (k && !out.includes(k)) out.push(k)
  }
  if (source === 'authorization') {
    const auth = headers.authorization
    if (typeof auth === 'string') add(bearerCredential(auth) ?? '')
  } else if (source === 'query-key') {
    // A name sent percent-encoded (`%6Bey=`) is `key` all the same to a server that decodes its
    // query, as Google's does: such a query is parsed too, or it would carry a blocked key past
    // its budget.
    if (query && (query.includes('key=') || query.includes('%'))) for (const k of new URLSearchParams(query).getAll('key')) add(k)
  } else {
    const v = headers[source]
    if (typeof v === 'string') add(v.trim())
  }
}

/**
 * Who pays for a call (contract: Attribution): every API key the request carries, distinct, the
 * one the provider bills first (`billed`: the places it reads, in its order; see
 * Provider.credentials). Every one of them goes upstream, so budgets admit a call only when each
 * is admitted: a decoy in another header cannot stand in for a blocked key. The raw keys exist
 * only in memory (this request's, and the last few keys' digests: keyIdentity): what is kept is a
 * SHA-256 and a hint of the first 3 and last 4 characters.
 */
export function extractCredentials(
  headers: IncomingHttpHeaders,
  query: string,
  billed: readonly CredentialSource[] = DEFAULT_BILLED,
): string[] {
  const out: string[] = []
  for (const src of billed) read(src, headers, query, out)
  // (A place already read for the billed key adds nothing the second time.)
  for (const src of ALL_SOURCES) if (!billed.includes(src)) read(src, headers, query, out)
  return out
}

/** The first API key found (Authorization, then `x-api-key`, `x-goog-api-key`, `api-key`, then `?key=`). */
export function extractApiKey(headers: IncomingHttpHeaders, query: string): string {
  return extractCredentials(headers, query, ALL_SOURCES)[0] ?? ''
}

/** A key as the ledger and budgets know it. */
export interface KeyIdentity {
  /** The raw key, for matching budget patterns; in memory for this call only. */
  apiKey: string
  apiKeyHash: string
  keyHint: string
}

export function keyIdentity(key: string): KeyIdentity {
  let known = KNOWN_KEYS.get(key)
  if (known === undefined) {
    known = { hash: hashKey(key), hint: keyHint(key) }
    if (key.length <= KNOWN_KEY_MAX_LENGTH) {
      if (KNOWN_KEYS.size >= KNOWN_KEYS_MAX) KNOWN_KEYS.delete(KNOWN_KEYS.keys().next().value!)
      KNOWN_KEYS.set(key, known)
    }
  } else if (KNOWN_KEYS.size > 1) {
    // Used again: the newest, so the least recently used is the one let go.
    KNOWN_KEYS.delete(key)
    KNOWN_KEYS.set(key, known)
  }
  return { apiKey: key, apiKeyHash: known.hash, keyHint: known.hint }
}

/**
 * The digests and hints of the keys seen last (a few per user, each on every call), so a key's
 * SHA-256 is not worked out again on every call: least recently used first. The raw keys here are
 * in this process's memory only, as each call's own are while it runs; never written anywhere.
 * A key longer than any vendor's is hashed each time and not kept.
 */
const KNOWN_KEYS = new Map<string, { readonly hash: string; readonly hint: string }>()
const KNOWN_KEYS_MAX = 256
const KNOWN_KEY_MAX_LENGTH = 512

/** Longest agent, session or tenant name kept; longer ones are cut to this many characters. */
export const MAX_LABEL = 200

/** An attribution value as stored: at most MAX_LABEL characters (never half a UTF-16 pair). */
export function limitLabel(v: string): string {
  return limitText(v, MAX_LABEL)
}

/** `v` cut to its first `max` characters, never half a UTF-16 pair. */
export function limitText(v: string, max: number): string {
  if (v.length <= max) return v
  const cut = v.charCodeAt(max - 1)
  return v.slice(0, cut >= 0xd800 && cut <= 0xdbff ? max - 1 : max)
}

export function hashKey(key: string): string {
  // One-shot hashing: same digest as createHash().update().digest(), without the stream object.
  return key ? hash('sha256', key, 'hex') : ''
}

export interface TenantMapping {
  pattern: string
  tenant: string
}

export function tenantFor(headers: IncomingHttpHeaders, key: string, mappings: readonly TenantMapping[]): string {
  const h = labelHeader(headers, 'x-burnrate-tenant')
  if (h) return h
  if (key) {
    for (const m of mappings) if (matches(m.pattern, key)) return m.tenant
  }
  return ''
}
