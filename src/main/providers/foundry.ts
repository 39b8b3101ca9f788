import { AnthropicMeter, inspectAnthropic } from './anthropic'
import type { CallShape, Provider, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Claude on Microsoft Foundry (Azure AI Foundry): Anthropic's Messages API at a Foundry
 * resource's `https://<resource>.services.ai.azure.com/anthropic` (`/v1/messages`,
 * `/v1/messages/count_tokens`), as Claude Code with `CLAUDE_CODE_USE_FOUNDRY=1` and Anthropic's
 * Foundry SDKs (`AnthropicFoundry`) call it. The body's `model` is the deployment's name (by
 * default the model's); the answer names the model that ran.
 *
 * Each resource has its own host, so there is no default base URL: `providers.foundry.base_url`
 * is the resource (`https://<resource>.services.ai.azure.com`), and a client's
 * `ANTHROPIC_FOUNDRY_BASE_URL` is `…/foundry/anthropic`. The answers are metered as Anthropic's
 * Messages are and priced at Anthropic's list: Claude on Foundry is billed at Anthropic's standard
 * API prices. The client's key (`x-api-key`, as the Foundry SDKs send it, or Azure's `api-key`) or
 * Microsoft Entra ID token (`Authorization: Bearer`) is passed on as it came.
 *
 * Foundry serves no Message Batches, Files or models list: any path but Messages and token
 * counting is passed on and recorded unbilled.
 */
const MESSAGES_API = '/anthropic'

export function inspectFoundry(req: RequestInfo): CallShape {
  const p = withoutTrailingSlashes(req.path)
  const rest = p.startsWith(`${MESSAGES_API}/`) ? p.slice(MESSAGES_API.length) : ''
  if (rest === '/v1/messages' || rest === '/v1/messages/count_tokens') return inspectAnthropic({ ...req, path: rest })
  return { endpoint: 'other', model: '', stream: false, billable: false }
}

export const foundry: Provider = {
  name: 'foundry',
  pricingId: 'anthropic',
  defaultBaseUrl: null,
  mount: '/foundry',
  credentials: ['x-api-key', 'api-key', 'authorization'],
  noUpstreamHint: 'set providers.foundry.base_url in the config to your Foundry resource (https://<resource>.services.ai.azure.com)',
  inspect: inspectFoundry,
  meter: () => new AnthropicMeter(),
}
