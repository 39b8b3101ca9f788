import type { NextFunction, Request, Response } from 'express'
import { errorBody } from '../http/errors'
import type { Feature } from '../server/context'
import { costs } from './costs'
import type { DashDeps } from './deps'
import { expensive } from './expensive'
import { streamExport } from './export'
import { formatParam, groupByParam, limitParam, ParamError, rangeParam, reportKindParam, tenantParam, whenParam } from './params'
import { buildReport } from '../report/report'
import { RollupWriter } from './rollup/writer'
import { sessions } from './sessions'
import { Statements } from './sql'
import { stats } from './stats'
import { summary } from './summary'
import { timeseries } from './timeseries'

/**
 * The dashboard REST API (`/api/dashboard/*`), read from rollup tables that the ledger's batch
 * writer keeps in step with `calls`. The rollups are kept even when `dashboard.enabled` is
 * false (turning it on later shows correct numbers); only the routes are left out, so they 404.
 */
export const dashboard: Feature = (ctx) => {
  const writer = new RollupWriter(ctx.db)
  const caught = writer.catchUp()
  if (caught > 0) ctx.log.info(`dashboard: folded ${caught} earlier calls into the rollups`)
  ctx.ledger.onBatch((rows) => writer.onBatch(rows), 'rollups')
  if (!ctx.config.dashboard.enabled) return

  const d: DashDeps = { q: new Statements(ctx.db), tz: ctx.config.timezone }
  /** Each request first writes what the ledger holds, so a call that ended is in every answer. */
  const route = (path: string, handle: (req: Request, res: Response, now: number) => unknown) => {
    ctx.app.get(`/api/dashboard/${path}`, async (req: Request, res: Response, next: NextFunction) => {
      try {
        ctx.ledger.flush()
        const body = await handle(req, res, Date.now())
        if (body !== undefined) res.set('cache-control', 'no-store').json(body)
      } catch (err) {
        if (err instanceof ParamError) {
          res.status(400).json(errorBody('invalid_request', err.message, { param: err.param }))
        } else next(err)
      }
    })
  }

  route('summary', (req, _res, now) => summary(d, tenantParam(req), now))
  route('timeseries', (req, _res, now) => timeseries(d, rangeParam(req, '24h'), tenantParam(req), now))
  route('costs', (req, _res, now) => costs(d, groupByParam(req), rangeParam(req, '30d'), tenantParam(req), now))
  route('sessions', (req, _res, now) => sessions(d, tenantParam(req), now))
  route('expensive', (req, _res, now) =>
    expensive(d, rangeParam(req, '30d'), limitParam(req, 1, 100, 10), tenantParam(req), now),
  )
  route('stats', (req, _res, now) => stats(d, rangeParam(req, '24h'), tenantParam(req), now))
  // Spend per day, week, month, session, model, agent or project over any window (`burnrate report`).
  route('report', (req) =>
    buildReport(ctx.db, {
      kind: reportKindParam(req),
      since: whenParam(req, 'since', d.tz),
      until: whenParam(req, 'until', d.tz),
      tenant: tenantParam(req),
      timezone: d.tz,
    }),
  )
  route('export', async (req, res, now) => {
    const format = formatParam(req)
    const range = rangeParam(req, '30d')
    const tenant = tenantParam(req)
    const since = whenParam(req, 'since', d.tz)
    const until = whenParam(req, 'until', d.tz)
    const window = since !== null || until !== null ? { start: since ?? 0, end: until ?? now + 1 } : undefined
    await streamExport(d, res, format, range, tenant, now, window)
    return undefined
  })
}
