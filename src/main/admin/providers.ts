import type { Router } from 'express'
import type { ProviderStatus } from '../../shared/api'
import type { Upstream } from '../proxy/routes'
import type { ProviderStats } from './provider-stats'

/** GET `/providers`: every configured provider, enabled or not, with today's live status. */
export function providerRoutes(router: Router, upstreams: Map<string, Upstream>, stats: ProviderStats): void {
  router.get('/providers', (_req, res) => {
    const now = Date.now()
    const rows: ProviderStatus[] = [...upstreams.values()].map((u) => {
      const d = stats.get(u.provider.name, now)
      return {
        name: u.provider.name,
        base_url: u.baseUrl ?? '',
        enabled: u.enabled,
        requests_today: d?.requests ?? 0,
        errors_today: d?.errors ?? 0,
        last_status: d?.lastStatus ?? null,
        last_error: d?.lastError ?? null,
        last_request_at: d?.lastAt == null ? null : new Date(d.lastAt).toISOString(),
        avg_latency_ms: d && d.requests > 0 ? d.latencySum / d.requests : null,
      }
    })
    rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    res.json(rows)
  })
}
