/**
 * SQLite against PostgreSQL: the same calls in both stores must give the same answer from every
 * dashboard endpoint (every range, tenant and member filter, every report kind), rows put in a
 * stable order first (ties sort differently on each store).
 */
import { getJson } from '../../dashboard/seed'
import { request } from '../../support/http'

export const TZ = 'Asia/Kathmandu'
export const KINDS = ['daily', 'weekly', 'monthly', 'model', 'agent', 'project', 'session']

/** Deep compare with float tolerance; returns list of differences. */
export function diff(a: any, b: any, path = '', out: string[] = []): string[] {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Math.abs(a - b) > 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))) out.push(`${path}: sqlite=${a} pg=${b}`)
  } else if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: length sqlite=${a.length} pg=${b.length}`)
    for (let i = 0; i < Math.min(a.length, b.length); i++) diff(a[i], b[i], `${path}[${i}]`, out)
  } else if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) diff(a[k], b[k], `${path}.${k}`, out)
  } else if (a !== b) out.push(`${path}: sqlite=${JSON.stringify(a)} pg=${JSON.stringify(b)}`)
  return out
}

export function paths(tenants: (string | null)[] = [null, 'acme', '']): string[] {
  const ps: string[] = []
  for (const tenant of tenants) {
    const tq = tenant === null ? '' : `&tenant=${tenant}`
    ps.push(`summary?x=1${tq}`, `sessions?limit=1000${tq}`, `unpriced?x=1${tq}`)
    for (const range of ['30m', '1h', '6h', '24h', '7d', '30d']) {
      ps.push(`timeseries?range=${range}${tq}`, `stats?range=${range}${tq}`, `expensive?range=${range}&limit=100${tq}`)
      ps.push(`export?range=${range}${tq}`)
      for (const g of ['model', 'provider', 'agent', 'session', 'api_key', 'tenant', 'project', 'member']) ps.push(`costs?group_by=${g}&range=${range}&limit=1000${tq}`)
    }
    for (const member of ['alice', 'bob']) ps.push(`costs?group_by=model&range=30d&member=${member}${tq}`, `expensive?range=30d&limit=100&member=${member}${tq}`)
    for (const k of KINDS) {
      const lim = ['daily', 'weekly', 'monthly'].includes(k) ? '' : '&limit=1000000'
      ps.push(`report?kind=${k}${lim}${tq}`)
    }
  }
  return ps
}

export async function compare(a: string, b: string, ps: string[], normalize: (p: string, x: any) => any = (_p, x) => x): Promise<string[]> {
  const out: string[] = []
  for (const p of ps) {
    const [x, y] = await Promise.all([getJson(`${a}/api/dashboard/${p}`), getJson(`${b}/api/dashboard/${p}`)])
    const d = diff(normalize(p, x.body), normalize(p, y.body), p)
    if (x.status !== y.status) d.push(`${p}: status ${x.status} vs ${y.status}`)
    out.push(...d.slice(0, 5))
  }
  return out
}

/** Rows in a stable order (ties sort differently on each store). */
export function normalize(p: string, x: any): any {
  if (!x || typeof x !== 'object') return x
  const key = (r: any) => JSON.stringify(r)
  const sortArr = (arr: any[]) => [...arr].sort((u, v) => (key(u) < key(v) ? -1 : 1))
  if (p.startsWith('costs') && x.rows) return { ...x, rows: sortArr(x.rows) }
  if (p.startsWith('expensive') && x.requests) return { ...x, requests: sortArr(x.requests.map((r: any) => ({ ...r, id: undefined }))) }
  if (p.startsWith('export') && x.calls) return { ...x, calls: sortArr(x.calls.map((r: any) => ({ ...r, id: undefined }))) }
  if (p.startsWith('sessions') && x.sessions) return { ...x, sessions: sortArr(x.sessions) }
  if (p.startsWith('report') && x.rows) return { ...x, rows: sortArr(x.rows) }
  if (p.startsWith('unpriced') && x.models) return { ...x, models: sortArr(x.models) }
  return x
}

export async function admin(url: string, method: string, path: string, body?: unknown) {
  return request(`${url}/api/admin/${path}`, {
    method,
    headers: { authorization: 'Bearer tok-review-parity-000', ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  } as any)
}
