import type { ErrorRequestHandler, Request, Response } from 'express'
import { INGEST_MAX_CALLS, type IngestResult } from '../../shared/api'
import { RollupWriter } from '../dashboard/rollup/writer'
import { bodyProblem } from '../http/body-errors'
import { errorBody, STATUS_OF } from '../http/errors'
import { boundedJson, declaredJson, notEmpty } from '../admin/json-body'
import type { PgLedger } from '../ledger/pg/pg-ledger'
import { bearerToken } from '../security/secrets'
import { slowDownFailures } from '../security/throttle'
import type { ServerContext } from '../server/context'
import { TeamMembers } from './members'
import { type FoldRollups, type Stored, storeIngested, storeIngestedPg } from './store'
import { type IngestRow, readIngestBatch, rejection } from './validate'

/** Largest ingest body: a full batch of calls with long names fits many times over. */
export const INGEST_MAX_BODY = 8 * 1024 * 1024 // 8mb

/**
 * `POST /api/ingest` on a team server (contract: Additions for the second wave): calls another
 * Burnrate recorded, stored under the member its token belongs to, idempotent by (member, id).
 * Only with `team.members` configured; otherwise the path is the contract's 404.
 * Per call: the good calls of a batch are stored even when others are refused (listed in
 * `rejected`). Budgets are not run on ingested calls (they were made, and checked, on the sender).
 */
export function ingestRoutes(ctx: ServerContext): void {
  if (ctx.config.team.members.length === 0) return
  const members = new TeamMembers(ctx.config)
  const store = storeFor(ctx)
  ctx.app.add((app, express) => {
    const router = express.Router()
    const memberOf = (req: Request): string | null => {
      const token = bearerToken(req.headers.authorization)
      return token === null ? null : members.memberOf(token)
    }
    // Wrong tokens from one client are slowed down, as for the admin API; the right one always gets in.
    router.use(
      slowDownFailures(
        (req) => memberOf(req) !== null,
        (req, res) => {
          const message =
            bearerToken(req.headers.authorization) === null
              ? 'Ingest needs the header "Authorization: Bearer <team token>" (team.token on the sending Burnrate).'
              : 'The team token is wrong: use the token this team server lists for you in team.members.'
          res.status(401).set('www-authenticate', 'Bearer').json(errorBody('unauthorized', message))
        },
      ),
    )
    router.use((req, res, next) => {
      // Only the POST takes a body: another method is no route here (404), not a wrong media type.
      if (req.method === 'POST' && !declaredJson(req, res, 'calls')) return
      next()
    })
    // Not strict: JSON that is no object (`null`) gets the handler's words, not "not valid JSON".
    router.use(boundedJson(INGEST_MAX_BODY, notEmpty))
    router.post('/', async (req: Request, res: Response, next) => {
      try {
        const member = memberOf(req)!
        const body = req.body as { calls?: unknown } | null
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          res.status(400).json(errorBody('invalid_request', 'The body must be a JSON object {"calls": [call, ...]}.', { param: 'calls' }))
          return
        }
        const calls = body.calls
        if (!Array.isArray(calls)) {
          res.status(400).json(errorBody('invalid_request', 'calls must be an array of calls.', { param: 'calls' }))
          return
        }
        if (calls.length > INGEST_MAX_CALLS) {
          res
            .status(400)
            .json(errorBody('invalid_request', `calls holds ${calls.length} calls; send at most ${INGEST_MAX_CALLS} per request.`, { param: 'calls' }))
          return
        }
        const { rows, rejected } = readIngestBatch(calls, member)
        let stored, clashes, revised
        try {
          ;({ stored, clashes, revised } = await store(rows))
        } catch (err) {
          // Nothing of this batch was stored; the sender keeps it and sends it again.
          ctx.log.warn(`ingest: ${rows.length} calls from member ${JSON.stringify(member)} could not be stored now: ${describe(err)}`)
          res
            .status(503)
            .set('retry-after', '5')
            .json(errorBody('service_unavailable', 'The team server cannot store calls right now; send them again in a few seconds.'))
          return
        }
        for (const c of clashes) {
          rejected.push(
            rejection(
              c.index,
              c.origin_id,
              'id',
              `member ${JSON.stringify(member)} already sent a different call with id ${c.origin_id}; the sending Burnrate's ledger seems to have started again, so give it a new member name and token in team.members`,
            ),
          )
        }
        rejected.sort((a, b) => a.index - b.index)
        const result: IngestResult = {
          accepted: stored.length,
          duplicates: calls.length - rejected.length - stored.length - revised.length,
          revised: revised.length,
          rejected,
        }
        if (rejected.length > 0) {
          ctx.log.warn(`ingest: member ${JSON.stringify(member)} sent ${rejected.length} invalid calls (first: ${rejected[0].error.message})`)
        }
        res.set('cache-control', 'no-store').json(result)
      } catch (err) {
        next(err)
      }
    })
    router.use(((err, req, res, next) => {
      const problem = bodyProblem(err, req, 'The request body is larger than 8mb; send fewer calls per request.')
      if (problem === null) next(err)
      else res.status(STATUS_OF[problem.type]).json(errorBody(problem.type, problem.message, { param: 'calls' }))
    }) as ErrorRequestHandler)
    app.use('/api/ingest', router)
  })
}

/**
 * Ingested calls go into the same rollups as every other call (and so into every dashboard
 * total), in the transaction that stores them. SQLite: the instance's own file and its
 * RollupWriter. PostgreSQL: the shared database, its rollups added in SQL (several team
 * instances may ingest at once).
 */
function storeFor(ctx: ServerContext): (rows: readonly IngestRow[]) => Promise<Stored> {
  if (ctx.store.dialect === 'postgres') {
    const ledger = ctx.ledger as PgLedger
    return async (rows) => {
      // The ledger migrates the schema before its first write: until then, wait for it (or answer 503).
      if (!ledger.storage.ready && !(await ledger.flushed())) throw new Error(`PostgreSQL is not ready: ${ledger.storage.last_error}`)
      return storeIngestedPg(ctx.store, rows)
    }
  }
  const writer = new RollupWriter(ctx.db)
  const fold: FoldRollups = async (_tx, rows) => writer.onBatch(rows)
  return (rows) => storeIngested(ctx.store, rows, fold)
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string }
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
}
