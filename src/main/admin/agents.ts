import { isIP } from 'node:net'
import type { Request, Response, Router } from 'express'
import type { AgentConnection, ConnectPlan } from '../../shared/connect'
import { AgentConnections, ConnectError } from '../connect/connections'
import type { LastSeen } from '../connect/last-seen'
import { errorBody } from '../http/errors'
import { jsonBody } from './json-body'

export interface AgentRoutesOptions {
  connections: AgentConnections
  lastSeen: LastSeen
  /** The address agents are pointed at: this server's own. */
  url(): string
}

function isLoopback(address: string | undefined): boolean {
  if (!address) return false
  const a = address.startsWith('::ffff:') ? address.slice(7) : address
  return a === '::1' || (isIP(a) === 4 && a.startsWith('127.'))
}

/** A ConnectError in the contract's error shape, with `code` (and `file`) saying which. */
function sendConnectError(res: Response, err: unknown): void {
  if (!(err instanceof ConnectError)) throw err
  const extra = { code: err.code, ...(err.file ? { file: err.file } : {}) }
  if (err.code === 'unknown_agent') res.status(404).json(errorBody('not_found', err.message, extra))
  else if (err.code === 'unsupported') res.status(400).json(errorBody('invalid_request', err.message, extra))
  else res.status(409).json(errorBody('conflict', err.message, extra))
}

/**
 * Agent connections under the admin API: `GET /agents`, `GET /agents/:agent/plan?action=`,
 * `POST /agents/:agent/connect` and `/disconnect` (README "Connect agents in one click").
 * They edit files in the home folder of the user Burnrate runs as, so only requests from this
 * machine (loopback) are answered, whatever the admin token.
 */
export function agentRoutes(router: Router, opts: AgentRoutesOptions): void {
  const { connections, lastSeen } = opts
  const status = (): AgentConnection[] =>
    connections.list().map((a) => ({ ...a, ...lastSeen.of(connections.connector(a.agent).recordedAs) }))
  const one = (agent: string) => status().find((a) => a.agent === agent)!

  router.use('/agents', (req, res, next) => {
    if (isLoopback(req.socket.remoteAddress)) return next()
    res
      .status(403)
      .json(errorBody('forbidden', 'Agent setup edits files on the machine Burnrate runs on, so it is only available from that machine (127.0.0.1).'))
  })
  // The ledger's last calls (PostgreSQL answers asynchronously) before the first answer.
  router.use('/agents', (_req, _res, next) => {
    lastSeen.seeded().then(() => next(), next)
  })

  router.get('/agents', (_req, res) => {
    // A malformed record of the connections is the client's to show, with its file, as on /plan.
    let agents: AgentConnection[]
    try {
      agents = status()
    } catch (err) {
      sendConnectError(res, err)
      return
    }
    res.json({ url: opts.url(), agents })
  })

  router.get('/agents/:agent/plan', (req, res) => {
    const action = req.query.action ?? 'connect'
    if (action !== 'connect' && action !== 'disconnect') {
      res.status(400).json(errorBody('invalid_request', 'The query parameter "action" must be "connect" or "disconnect".', { param: 'action' }))
      return
    }
    try {
      const agent = req.params.agent as string
      res.json(action === 'connect' ? connections.planConnect(agent, opts.url()) : connections.planDisconnect(agent))
    } catch (err) {
      sendConnectError(res, err)
    }
  })

  const apply = (action: 'connect' | 'disconnect') => (req: Request, res: Response) => {
    if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
      res.status(400).json(errorBody('invalid_request', 'The request body must be a JSON object: {} or {"plan_id": "<id>"}.'))
      return
    }
    const body = req.body as Record<string, unknown>
    const unknown = Object.keys(body).filter((k) => k !== 'plan_id')
    if (unknown.length) {
      res.status(400).json(errorBody('invalid_request', `Unknown field "${unknown[0]}"; the only field is "plan_id".`, { param: unknown[0] }))
      return
    }
    if (body.plan_id !== undefined && typeof body.plan_id !== 'string') {
      res.status(400).json(errorBody('invalid_request', '"plan_id" must be the id of a plan from GET /api/admin/agents/{agent}/plan.', { param: 'plan_id' }))
      return
    }
    const agent = req.params.agent as string
    const planId = body.plan_id as string | undefined
    let plan: ConnectPlan
    try {
      plan = action === 'connect' ? connections.connect(agent, opts.url(), { planId }) : connections.disconnect(agent, { planId })
    } catch (err) {
      sendConnectError(res, err)
      return
    }
    res.json({ plan, agent: one(agent) })
  }
  router.post('/agents/:agent/connect', ...jsonBody(), apply('connect'))
  router.post('/agents/:agent/disconnect', ...jsonBody(), apply('disconnect'))
}
