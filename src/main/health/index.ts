import type { Feature } from '../server/context'

/**
 * `GET /api/health`: `{status, version, uptime_s}`, plus the ledger's write state, the prices'
 * state and the sections the server (`data_dir`: whether the data folder is shared) and features
 * (`otel`) add. Answered without the API app (../server/api-app.ts), so it answers as soon as the
 * server listens; it reads the prices'
 * state and never waits for or starts their load (they load a moment after start-up).
 */
export const health: Feature = (ctx) => {
  ctx.app.bare('/api/health', (req, res) => {
    const ledger = ctx.ledger.status
    const pricesError = ctx.pricer.lastError
    const text = JSON.stringify({
      // Degraded while calls cannot be written, or cannot be metered (each is refused with a 500).
      status: ledger.writable && pricesError === null ? 'ok' : 'degraded',
      version: ctx.version,
      uptime_s: Math.floor((Date.now() - ctx.startedAt) / 1000),
      ledger: {
        writable: ledger.writable,
        pending: ledger.pending,
        dropped: ledger.dropped,
        // Of dropped, those let go past ledger.max_pending (the others: rows the database refused; the log says why).
        overflowed: Math.min(ledger.overflowed ?? 0, ledger.dropped),
        // Left memory past ledger.max_pending but on disk in the spill journal, not stored yet: not lost, stored later.
        left_on_disk: ledger.left_on_disk ?? 0,
        last_error: ledger.last_error,
      },
      prices: { ready: ctx.pricer.isReady, last_error: pricesError },
      ...Object.fromEntries(Object.entries(ctx.healthSections).map(([name, section]) => [name, section()])),
    })
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
    res.end(req.method === 'HEAD' ? undefined : text)
  })
}
