import type { NextFunction, Request, Response } from 'express'
import { alertsOf } from '../alerts'
import { budgetsOf } from '../budgets'
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '../../shared/api'
import { errorBody } from '../http/errors'
import type { Feature } from '../server/context'
import { costs } from './costs'
import { budgetsAnswer } from './budgets-answer'
import type { DashDeps } from './deps'
import { expensive } from './expensive'
import { exportName, streamExport } from './export'
import { OPEN_END, OPEN_START } from './export-query'
import { formatParam, given, groupByParam, limitParam, memberParam, ParamError, rangeParam, reportKindParam, reportLimitParam, tenantParam, windowParams } from './params'
import { buildReport } from '../report/report'
import { FIRST_TIME } from '../report/window'
import { applyRollups } from './rollup/apply'
import { reportZone } from './rollup/report'
import { ensureReportZone } from './rollup/report-build'
import { RollupWriter } from './rollup/writer'
import { sessions } from './sessions'
import { stats } from './stats'
import { summary } from './summary'
import { timeseries } from './timeseries'
import { unpriced } from './unpriced'
import { pricesOf } from '../pricing/feature'

/**
 * The dashboard REST API (`/api/dashboard/*`), read from rollup tables that the ledger's batch
 * writer keeps in step with `calls`. The rollups are kept even when `dashboard.enabled` is
 * false (turning it on later shows correct numbers); only the routes are left out, so they 404.
 */
export const dashboard: Feature = (ctx) => {
  if (ctx.ledger.kind === 'postgres') {
    // Each batch's rollups in the batch's own transaction, safe with other instances writing the same rows.
    ctx.ledger.onBatchTx((tx, rows) => applyRollups(tx, rows))
  } else {
    // The report rollup's days are the configured zone's (rebuilt from the calls when the zone changed).
    const rebuilt = ensureReportZone(ctx.db, ctx.config.timezone)
    if (rebuilt > 0) ctx.log.info(`dashboard: built the report rollup for ${ctx.config.timezone} from ${rebuilt} calls`)
    const writer = new RollupWriter(ctx.db)
    const caught = writer.catchUp()
    if (caught > 0) ctx.log.info(`dashboard: folded ${caught} earlier calls into the rollups`)
    ctx.ledger.onBatch((rows) => writer.onBatch(rows), 'rollups')
  }
  if (!ctx.config.dashboard.enabled) return

  const d: DashDeps = { q: ctx.store, tz: ctx.config.timezone }
  /** Each request first waits for what the ledger holds to be written, so a call that ended is in every answer. */
  const route = (path: string, handle: (req: Request, res: Response, now: number) => unknown) => {
    ctx.app.add((app) =>
      app.get(`/api/dashboard/${path}`, async (req: Request, res: Response, next: NextFunction) => {
        try {
          await ctx.ledger.flushed()
          const body = await handle(req, res, Date.now())
          if (body !== undefined) res.set('cache-control', 'no-store').json(body)
        } catch (err) {
          if (err instanceof ParamError) {
            res.status(400).json(errorBody('invalid_request', err.message, { param: err.param }))
          } else next(err)
        }
      }),
    )
  }

  route('summary', (req, _res, now) => summary(d, tenantParam(req), now))
  route('timeseries', (req, _res, now) => timeseries(d, rangeParam(req, '24h'), tenantParam(req), now))
  // Lists are bounded (100 rows by default, 1000 at most) and say how many rows there are in all.
  const listLimit = (req: Request) => limitParam(req, 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT)
  route('costs', (req, _res, now) =>
    costs(d, groupByParam(req), rangeParam(req, '30d'), tenantParam(req), now, listLimit(req), memberParam(req)),
  )
  route('sessions', (req, _res, now) => sessions(d, tenantParam(req), now, listLimit(req)))
  route('expensive', (req, _res, now) =>
    expensive(d, rangeParam(req, '30d'), limitParam(req, 1, 100, 10), tenantParam(req), now, memberParam(req)),
  )
  const budgets = budgetsOf(ctx)
  route('budgets', (req, _res, now) => budgetsAnswer(ctx, tenantParam(req), now))
  // Plans (the vendors' windows per credential), alerts (webhook deliveries, runaway marks) and the
  // price data are the whole server's, not sums of one tenant's calls: `tenant` is checked as on
  // every endpoint (given twice, a 400) and leaves the answer as it is.
  const wholeServer = (req: Request) => void tenantParam(req)
  const alerts = alertsOf(ctx)
  route('alerts', (req) => {
    wholeServer(req)
    return {
      webhooks: alerts.webhooks.configured,
      deliveries: alerts.webhooks.deliveries(),
      runaway: budgets.runaway.events().map((e) => ({
        kind: e.kind, action: e.action, session: e.session, agent: e.agent, model: e.model, key_hint: e.key_hint,
        repeats: e.count, usd_last_minute: e.usd_last_minute, at: new Date(e.at).toISOString(),
      })),
    }
  })
  route('stats', (req, _res, now) => stats(d, rangeParam(req, '24h'), tenantParam(req), now))
  route('unpriced', (req) => unpriced(d, tenantParam(req)))
  route('plans', (req, _res, now) => {
    wholeServer(req)
    return { accounts: ctx.plans?.list(now) ?? [] }
  })
  const prices = pricesOf(ctx)
  route('prices', (req) => {
    wholeServer(req)
    return prices.updater.status()
  })
  // Spend per day, week, month, session, model, agent or project over any window (`burnrate report`);
  // whole days from the SQLite report rollup, kept in the configured zone (PostgreSQL: from calls).
  const rollupZone = ctx.ledger.kind === 'sqlite' ? reportZone(ctx.db) : null
  route('report', (req) => {
    const kind = reportKindParam(req)
    const { since, until } = windowParams(req, d.tz)
    return buildReport(ctx.store, {
      kind,
      since,
      until,
      tenant: tenantParam(req),
      timezone: d.tz,
      limit: reportLimitParam(req, kind),
    }, rollupZone)
  })
  route('export', async (req, res, now) => {
    const format = formatParam(req)
    const range = rangeParam(req, '30d')
    const tenant = tenantParam(req)
    const { since, until } = windowParams(req, d.tz)
    // No `until`: every call from `since` on, those stamped after this clock's now too (as `burnrate export --local`).
    // A `since` at the year 0000's start or before (`burnrate export` through a server sends it for
    // "the whole ledger") is no start: a call stamped before 1970 was left out.
    const span = since !== null || until !== null
      ? { start: since === null || since <= FIRST_TIME ? OPEN_START : since, end: until ?? OPEN_END, name: exportName(given(req, 'since'), given(req, 'until')) }
      : undefined
    await streamExport(d, res, format, range, tenant, now, span, memberParam(req), { ms: ctx.config.dashboard.export_stall_ms, log: ctx.log })
    return undefined
  })
}
