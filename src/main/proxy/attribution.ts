import { hash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { matches } from '../budgets/pattern'

/**
 * Who pays for a call (contract: Attribution). The raw key exists only in this request's
 * memory: what is kept is its SHA-256 and a hint of its first 3 and last 4 characters.
 */
export function extractApiKey(headers: IncomingHttpHeaders, query: string): string {
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const m = /^\s*bearer\s+(.+?)\s*$/i.exec(auth)
    if (m) return m[1]
  }
  for (const h of ['x-api-key', 'x-goog-api-key', 'api-key'] as const) {
    const v = headers[h]
    if (typeof v === 'string' && v.trim()) return v.trim()
  }
  if (query && query.includes('key=')) {
    const k = new URLSearchParams(query).get('key')
    if (k) return k
  }
  return ''
}

export function hashKey(key: string): string {
  // One-shot hashing: same digest as createHash().update().digest(), without the stream object.
  return key ? hash('sha256', key, 'hex') : ''
}

export function keyHint(key: string): string {
  if (!key) return ''
  if (key.length < 12) return '…'
  return `${key.slice(0, 3)}…${key.slice(-4)}`
}

export interface TenantMapping {
  pattern: string
  tenant: string
}

export function tenantFor(headers: IncomingHttpHeaders, key: string, mappings: readonly TenantMapping[]): string {
  const h = headers['x-burnrate-tenant']
  if (typeof h === 'string' && h.trim()) return h.trim()
  if (key) {
    for (const m of mappings) if (matches(m.pattern, key)) return m.tenant
  }
  return ''
}
