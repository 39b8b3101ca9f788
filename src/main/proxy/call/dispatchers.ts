import { type Dispatcher, Pool } from 'undici'
import type { Upstream } from '../routes'

/** The connections to upstreams: one dispatcher per upstream, closed at shutdown. */
export interface UpstreamDispatchers {
  for(upstream: Upstream): Dispatcher
  close(): Promise<void>
}

export interface DispatcherTimeouts {
  connect_timeout_ms: number
}

/**
 * One keep-alive connection pool per upstream. Its own timeouts are off but the connect one:
 * the first-byte and idle timeouts are the call's (forward.ts, response.ts).
 */
export function createUpstreamDispatchers(timeouts: DispatcherTimeouts): UpstreamDispatchers {
  const pools = new Map<Upstream, Pool>()
  return {
    for(u) {
      let p = pools.get(u)
      if (!p) {
        p = new Pool(u.origin, {
          keepAliveTimeout: 30_000,
          headersTimeout: 0,
          bodyTimeout: 0,
          connect: { timeout: timeouts.connect_timeout_ms },
        })
        pools.set(u, p)
      }
      return p
    },
    async close() {
      const all = [...pools.values()]
      pools.clear()
      await Promise.all(all.map((p) => p.destroy().catch(() => {})))
    },
  }
}
