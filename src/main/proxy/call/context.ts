import type { IncomingHttpHeaders } from 'node:http'
import { detectAgent } from '../../agents/detect'
import type { SessionInference } from '../../agents/sessions'
import { warmEstimate } from '../../metering/estimate'
import { billingOf } from '../../plans/billing'
import type { CallShape, RequestInfo } from '../../providers/types'
import { extractCredentials, keyIdentity, limitLabel, MAX_LABEL, type TenantMapping, tenantFor } from '../attribution'
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
  // A model name is looked up in the price data (work that grows with its length) and stored:
  // one of megabytes (an agent's bug) is cut as agent and session names are.
  if (shape.model.length > MAX_LABEL) shape.model = limitLabel(shape.model)
  // The tokenizer takes ~0.5 s to load the first time: start now, so the estimate is ready when the stream ends.
  if (shape.mayLackUsage) warmEstimate(shape.model)
  const keys = extractCredentials(headers, route.query, provider.credentials)
  const key = keys[0] ?? ''
  const billed = keyIdentity(key)
  const agent = detectAgent(headers, parsed)
  agent.agent = limitLabel(agent.agent)
  agent.session = limitLabel(agent.session)
  if (!agent.session && who.sessions) agent.session = who.sessions.assign(agent.agent, billed.apiKeyHash, ts)
  // Each field named, not `...billed`: a literal with a spread in it copies the spread object's
  // fields at run time and adds each field after them one by one; this one is made whole from its
  // template (the same fields, in the same order).
  const ctx: CallContext = {
    provider,
    shape,
    apiKey: billed.apiKey,
    apiKeyHash: billed.apiKeyHash,
    keyHint: billed.keyHint,
    credentials: keys.length > 1 ? keys.map(keyIdentity) : undefined,
    tenant: limitLabel(tenantFor(headers, key, who.tenants)),
    agent: agent.agent,
    session: agent.session,
    client: agent.client,
    project: agent.project,
    ts,
    body: parsed,
    bodyBytes,
    billing: billingOf(provider.name, key, headers),
  }
  return { info, ctx }
}
