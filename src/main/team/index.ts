import type { Feature } from '../server/context'
import { ingestRoutes } from './ingest'

/**
 * Teams (README: Reporting to a team server). On a team server (`team.members`), `POST /api/ingest`
 * takes the calls members' Burnrates send.
 */
export const team: Feature = (ctx) => {
  ingestRoutes(ctx)
}
