import type { Feature } from '../server/context'

/** `GET /api/health`: `{status, version, uptime_s}`, plus the ledger's write state and the sections features add (`otel`). */
export const health: Feature = (ctx) => {
  ctx.app.get('/api/health', (_req, res) => {
    const ledger = ctx.ledger.status
    res.json({
      status: ledger.writable ? 'ok' : 'degraded',
      version: ctx.version,
      uptime_s: Math.floor((Date.now() - ctx.startedAt) / 1000),
      ledger: {
        writable: ledger.writable,
        pending: ledger.pending,
        dropped: ledger.dropped,
        last_error: ledger.last_error,
      },
      ...Object.fromEntries(Object.entries(ctx.healthSections).map(([name, section]) => [name, section()])),
    })
  })
}
