import { ConfigError } from '../config/load'
import { onRevised } from '../ledger/revisions'
import type { Feature } from '../server/context'
import { ingestRoutes } from './ingest'
import { TeamSender } from './sender'

/**
 * Teams (README: Reporting to a team server). On a team server (`team.members`), `POST /api/ingest`
 * takes the calls members' Burnrates send. On a member's Burnrate (`team.url` and `team.token`),
 * a sender sends the calls recorded here there, and `GET /api/health` gains a `team` section.
 */
export const team: Feature = (ctx) => {
  ingestRoutes(ctx)
  const { url, token } = ctx.config.team
  if (url === undefined && token === undefined) return
  const where = `config ${ctx.config.source ?? '(defaults)'}`
  if (url === undefined) throw new ConfigError(`${where}: team.token is set but team.url is not; give the team server's address in team.url`)
  if (token === undefined) throw new ConfigError(`${where}: team.url is set but team.token is not; ask the team server's admin for your token`)
  if (ctx.store.dialect !== 'sqlite') {
    // The sender reads the calls from this instance's own SQLite ledger; say so rather than send nothing.
    throw new ConfigError(`${where}: team.url: reporting to a team server needs this Burnrate's ledger in its own SQLite file; remove storage.url or team.url`)
  }
  const sender = new TeamSender({
    db: ctx.db,
    url,
    token,
    batchSize: ctx.config.team.batch_size,
    maxBackoffMs: ctx.config.team.max_backoff_ms,
    log: ctx.log,
    pending: () => ctx.ledger.status.pending,
    egress: ctx.egress,
  }).start()
  const stop = ctx.ledger.onCall(() => sender.wake())
  // Calls re-priced, or given a background response's real usage, are sent again (with their revision).
  const stopRevised = onRevised(ctx.ledger, () => sender.wake())
  ctx.healthSections.team = () => sender.status()
  ctx.onClose(async () => {
    stop()
    stopRevised()
    await sender.stop()
  })
  ctx.log.info(`team: sending recorded calls to ${sender.label}`)
}
