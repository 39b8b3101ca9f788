import { vi } from 'vitest'

export interface FakeRequest {
  method: string
  path: string
  query: URLSearchParams
  headers: Record<string, string>
  body: unknown
}
export type FakeReply = { status?: number; body?: unknown } | Promise<{ status?: number; body?: unknown }>
export type FakeRoute = (req: FakeRequest) => FakeReply

/**
 * A stand-in for the server behind `fetch`, for component and store tests (the end-to-end tests
 * use the real one). Routes are `"GET /api/..."`; anything else answers the contract's 404.
 */
export function fakeServer(routes: Record<string, FakeRoute>) {
  const calls: FakeRequest[] = []
  let down = false
  const fetchImpl = vi.fn(async (input: string, init: RequestInit = {}) => {
    if (down) throw new TypeError('Failed to fetch')
    const url = new URL(input, 'http://burnrate.test')
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries((init.headers as Record<string, string>) ?? {})) headers[k.toLowerCase()] = v
    const req: FakeRequest = {
      method: init.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    }
    calls.push(req)
    const route = routes[`${req.method} ${req.path}`]
    const reply = route ? await route(req) : { status: 404, body: { error: { type: 'not_found', message: `No route ${req.method} ${req.path}.` } } }
    const status = reply.status ?? 200
    return new Response(status === 204 ? null : JSON.stringify(reply.body ?? null), {
      status,
      headers: { 'content-type': 'application/json' },
    })
  })
  vi.stubGlobal('fetch', fetchImpl)
  return {
    calls,
    fetch: fetchImpl,
    /** Every request fails as if the server were gone, until `setDown(false)`. */
    setDown(v: boolean) {
      down = v
    },
    routes,
  }
}

export const err = (status: number, type: string, message: string) => ({ status, body: { error: { type, message } } })

export const flush = () => new Promise((r) => setTimeout(r, 0))
