import { isObject } from '../metering/usage'
import { OpenAIMeter, READS, openaiEndpointOf, withFastTier } from './openai'
import type { CallShape, Provider, ProviderSettings, RequestInfo } from './types'

/**
 * Azure OpenAI. There is no default base URL: each resource has its own
 * (`https://<resource>.openai.azure.com`), set as `providers.azure.base_url`. Clients send
 * `/openai/deployments/<deployment>/chat/completions?api-version=...` (the deployment names
 * the model) or the v1 API `/openai/v1/chat/completions` and `/openai/responses` (the body's
 * `model` is the deployment name). A deployment is priced as the model the response names;
 * when the response names none, as `providers.azure.deployments[<deployment>]`, else as the
 * deployment name itself.
 */
const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)(\/.*)?$/

export function inspectAzure(req: RequestInfo, deployments: Record<string, string>): CallShape {
  const path = req.path.replace(/\/+$/, '')
  const body = isObject(req.body) ? req.body : undefined
  let deployment = ''
  let rest = path
  const d = DEPLOYMENT.exec(path)
  if (d) {
    deployment = safeDecode(d[1])
    rest = d[2] ?? '/'
  } else if (path.startsWith('/openai/v1/')) {
    rest = path.slice('/openai/v1'.length)
  } else if (path.startsWith('/openai/')) {
    rest = path.slice('/openai'.length)
  }
  if (!deployment && typeof body?.model === 'string') deployment = body.model
  const endpoint = openaiEndpointOf(req.method, rest)
  return {
    endpoint,
    model: deployments[deployment] ?? deployment,
    stream: body?.stream === true,
    billable: endpoint !== 'other' && !READS.has(endpoint),
    free: READS.has(endpoint) || undefined,
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

function azureProvider(deployments: Record<string, string>): Provider {
  return {
    name: 'azure',
    pricingId: 'azure',
    defaultBaseUrl: null,
    mount: '/azure',
    credentials: ['api-key', 'authorization'],
    inspect: (req) => withFastTier(inspectAzure(req, deployments), req.body),
    meter: (shape) => new OpenAIMeter({ endpoint: shape.endpoint, openaiTiers: true }),
    configure: (s: ProviderSettings) => azureProvider(s.deployments ?? {}),
  }
}

export const azure: Provider = azureProvider({})
