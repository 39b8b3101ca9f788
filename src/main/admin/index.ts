import { alertsOf, sendTestAlert } from '../alerts'
import { budgetsOf } from '../budgets'
import { errorBody } from '../http/errors'
import { ConfigError } from '../config/load'
import { slowDownFailures } from '../security/throttle'
import type { Feature } from '../server/context'
import { LastSeen } from '../connect/last-seen'
import { latestNotice } from '../ledger/notices'
import { apiKeyRoutes } from './api-keys'
import { adminTokenIsRight, refuseAdmin } from './auth'
import { jsonBodyErrors } from './json-body'
import { priceRoutes } from './prices'
import { ProviderStats } from './provider-stats'
import { providerRoutes } from './providers'
import { ruleRoutes } from './rules'

/**
 * The admin API under `/api/admin` (contract: Admin API), only with `admin.enabled: true`;
 * otherwise those paths fall through to the contract's 404. No CORS headers are ever added here.
 */
export const admin: Feature = (ctx) => {
  if (!ctx.config.admin.enabled) return
  const token = ctx.config.admin.token
  if (!token || !token.trim()) {
    throw new ConfigError('admin.token: expected a non-empty token because admin.enabled is true')
  }
  const budgets = budgetsOf(ctx)
  const stats = new ProviderStats(ctx.config.timezone)
  stats.seed(ctx.store).catch((err: Error) => ctx.log.warn(`admin: could not read today's calls for provider status: ${err.message}`))
  ctx.onClose(ctx.ledger.onCall((call) => stats.observe(call)))

  const alerts = alertsOf(ctx)
  const lastSeen = new LastSeen(ctx.store)
  ctx.onClose(ctx.ledger.onCall((call) => lastSeen.observe(call)))
  if (ctx.notices) ctx.onClose(lastSeen.follow(ctx.notices, latestNotice(ctx.db)))
  // Agent setup and its file editors (diff, jsonc-parser, toml-patch) load off the start-up
  // path; the server listens once they are in, and the routes are built (with the rest of the
  // API app, ../server/api-app.ts) after that.
  let agents: { agentRoutes: typeof import('./agents').agentRoutes; connections: import('../connect/connections').AgentConnections } | null = null
  ctx.app.add((app, express) => {
    const router = express.Router()
    // The right token always gets in; wrong ones from one client are slowed down (src/main/security/throttle.ts).
    router.use(slowDownFailures(adminTokenIsRight(token), refuseAdmin))
    ruleRoutes(router, budgets, ctx.config.source)
    apiKeyRoutes(router, budgets, ctx.ledger.spend)
    providerRoutes(router, ctx.upstreams, stats)
    router.post('/alerts/test', async (_req, res, next) => {
      try {
        if (alerts.webhooks.configured === 0) {
          res.status(409).json(errorBody('conflict', 'No webhooks are configured: add alerts.webhooks ([{url, format: json|slack}]) to the config file and restart Burnrate.'))
          return
        }
        res.json({ deliveries: await sendTestAlert(alerts) })
      } catch (err) {
        next(err)
      }
    })
    priceRoutes(router, ctx)
    // Loaded before the server listens, so before the app can be built.
    if (!agents) throw new Error('admin: the agent setup routes were not loaded before the API app was built')
    agents.agentRoutes(router, { connections: agents.connections, lastSeen, url: () => ctx.url() })
    router.use(jsonBodyErrors)
    app.use('/api/admin', router)
  })
  return Promise.all([import('./agents'), import('../connect/connections')]).then(([{ agentRoutes }, { AgentConnections }]) => {
    agents = { agentRoutes, connections: new AgentConnections({ ...ctx.agentHome, dataDir: ctx.config.data_dir }) }
  })
}
