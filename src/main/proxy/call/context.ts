import type { IncomingHttpHeaders } from 'node:http'
import { detectAgent } from '../../agents/detect'
import type { SessionInference } from '../../agents/sessions'
import { counterFor } from '../../metering/estimate'
import type { CallShape, RequestInfo } from '../../providers/types'
import { extractApiKey, hashKey, keyHint, type TenantMapping, tenantFor } from '../attribution'
import type { CallContext } from '../gate'
import type { Route } from '../routes'

export interface Attributors {
  sessions?: SessionInference
  tenants: readonly TenantMapping[]
}

/**
 * What a call is and who spends it, before it goes upstream: the provider's reading of the
 * request (model, endpoint) and the attribution (key, tenant, agent, session).
 */
export function describeCall(
  route: Route,
  method: string,
  headers: IncomingHttpHeaders,
  parsed: any,
  bodyBytes: number,
  ts: number,
  who: Attributors,
): { info: RequestInfo; ctx: CallContext } {
  const provider = route.upstream.provider
  const info: RequestInfo = { method, path: route.path, query: route.query, headers, body: parsed }
  const shape: CallShape = provider.inspect(info)
  // The tokenizer takes ~0.5 s to load the first time: start now, so the estimate is ready when the stream ends.
  if (shape.mayLackUsage) void counterFor(shape.model)
  const key = extractApiKey(headers, route.query)
  const agent = detectAgent(headers, parsed)
  const apiKeyHash = hashKey(key)
  if (!agent.session && who.sessions) agent.session = who.sessions.assign(agent.agent, apiKeyHash, ts)
  const ctx: CallContext = {
    provider,
    shape,
    apiKey: key,
    apiKeyHash,
    keyHint: keyHint(key),
    tenant: tenantFor(headers, key, who.tenants),
    agent: agent.agent,
    session: agent.session,
    ts,
    body: parsed,
    bodyBytes,
  }
  return { info, ctx }
}
