import { isObject } from '../metering/usage'
import { OpenAIBatchMeter } from './openai-batch'
import { fileIdOf, openaiEndpointOf, openaiEndpointShape, requestTier, withFastTier } from './openai-endpoints'
import { OpenAIMeter, type OpenAIMeterOptions } from './openai-meter'
import type { CallShape, MeterResult, Provider, ProviderSettings, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Azure OpenAI. There is no default base URL: each resource has its own
 * (`https://<resource>.openai.azure.com`), set as `providers.azure.base_url`. Clients send
 * `/openai/deployments/<deployment>/chat/completions?api-version=...` (the deployment names
 * the model) or the v1 API `/openai/v1/chat/completions` and `/openai/responses` (the body's
 * `model` is the deployment name), and a Foundry resource's model inference API
 * `/models/chat/completions?api-version=...` (DeepSeek, Phi, Llama…: the body's `model` too). A deployment is priced as the model the response names;
 * when the response names none, or names the deployment (the Responses API's answers do), as
 * `providers.azure.deployments[<deployment>]`, else as the deployment name itself.
 */
const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)(\/.*)?$/

export function inspectAzure(req: RequestInfo, deployments: Record<string, string>): CallShape {
  const { rest } = azurePath(req.path)
  const body = isObject(req.body) ? req.body : undefined
  const deployment = deploymentOf(req)
  const endpoint = openaiEndpointOf(req.method, rest)
  return {
    endpoint,
    model: deployments[deployment] ?? deployment,
    stream: body?.stream === true,
    ...openaiEndpointShape(endpoint),
  }
}

/** The deployment a call goes through: its path's, else (the v1 API, a Foundry resource's) its body's `model`. */
function deploymentOf(req: RequestInfo): string {
  const inPath = azurePath(req.path).deployment
  return inPath || (isObject(req.body) && typeof req.body.model === 'string' ? req.body.model : '')
}

/** The deployment a path names ('' for the v1 API and the resource's own paths) and the path below it, as OpenAI's API spells it. */
function azurePath(raw: string): { deployment: string; rest: string } {
  const path = withoutTrailingSlashes(raw)
  const d = DEPLOYMENT.exec(path)
  if (d) return { deployment: safeDecode(d[1]), rest: d[2] ?? '/' }
  if (path.startsWith('/openai/v1/')) return { deployment: '', rest: path.slice('/openai/v1'.length) }
  // A Foundry resource's model inference API (`https://<resource>.services.ai.azure.com/models`), the body naming the deployment.
  if (path.startsWith('/models/')) return { deployment: '', rest: path.slice('/models'.length) }
  if (path.startsWith('/openai/')) return { deployment: '', rest: path.slice('/openai'.length) }
  return { deployment: '', rest: path }
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
    meter: (shape, req) =>
      shape.lines
        ? new OpenAIBatchMeter('azure', fileIdOf(azurePath(req.path).rest))
        : new AzureMeter({ endpoint: shape.endpoint, openaiTiers: true, requestTier: requestTier(req.body) }, deployments, deploymentOf(req)),
    configure: (s: ProviderSettings) => azureProvider(s.deployments ?? {}),
  }
}

/**
 * Azure's answers, read as OpenAI's. The Responses API's answer names the deployment as its
 * `model` (`gpt-5-01`, where Chat Completions names `gpt-5-2025-08-07`), which prices nothing:
 * an answer naming the deployment the call went through, when `providers.azure.deployments` maps
 * it (or by a read naming none, a background response's poll), is priced as its model. An answer naming anything else names the model that ran, even one
 * that is also the name of another, mapped, deployment (a deployment `gpt-4` moved to gpt-4o
 * beside one still running GPT-4, whose answers say `gpt-4`).
 */
class AzureMeter extends OpenAIMeter {
  constructor(
    opts: OpenAIMeterOptions,
    private readonly deployments: Record<string, string>,
    private readonly deployment: string,
  ) {
    super(opts)
  }

  override result(): MeterResult {
    const r = super.result()
    return r.model !== undefined && (r.model === this.deployment || this.deployment === '') && Object.hasOwn(this.deployments, r.model) ? { ...r, model: this.deployments[r.model] } : r
  }
}

export const azure: Provider = azureProvider({})
