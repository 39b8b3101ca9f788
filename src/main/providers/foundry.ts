import { inspectAnthropic } from './anthropic'
import { AnthropicMeter } from './anthropic-meter'
import type { CallShape, Provider, ProviderSettings, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Claude on Microsoft Foundry (Azure AI Foundry): Anthropic's Messages API at a Foundry
 * resource's `https://<resource>.services.ai.azure.com/anthropic` (`/v1/messages`,
 * `/v1/messages/count_tokens`), as Claude Code with `CLAUDE_CODE_USE_FOUNDRY=1` and Anthropic's
 * Foundry SDKs (`AnthropicFoundry`) call it. The body's `model` is the deployment's name (by
 * default the model's); the answer names the model that ran.
 *
 * Each resource has its own host, so there is no default base URL: `providers.foundry.base_url`
 * is the resource (`https://<resource>.services.ai.azure.com`, or the same with `/anthropic`,
 * as the client's own setting had it), and a client's
 * `ANTHROPIC_FOUNDRY_BASE_URL` is `…/foundry/anthropic`. The answers are metered as Anthropic's
 * Messages are and priced at Anthropic's list: Claude on Foundry is billed at Anthropic's standard
 * API prices. The client's key (`x-api-key`, as the Foundry SDKs send it, or Azure's `api-key`) or
 * Microsoft Entra ID token (`Authorization: Bearer`) is passed on as it came.
 *
 * Foundry serves no Message Batches, Files or models list: any path but Messages and token
 * counting is passed on and recorded unbilled.
 */
const MESSAGES_API = '/anthropic'

/**
 * The call a path below the mount is: `below` is the part of the path the base URL does not
 * hold (`/anthropic` when `providers.foundry.base_url` is the resource, '' when it already ends
 * in `/anthropic`, as the client's `ANTHROPIC_FOUNDRY_BASE_URL` did).
 */
export function inspectFoundry(req: RequestInfo, below = MESSAGES_API): CallShape {
  const p = withoutTrailingSlashes(req.path)
  const rest = below === '' ? p : p.startsWith(`${below}/`) ? p.slice(below.length) : ''
  if (rest === '/v1/messages' || rest === '/v1/messages/count_tokens') return inspectAnthropic({ ...req, path: rest })
  return { endpoint: 'other', model: '', stream: false, billable: false }
}

/** Whether a configured base URL already ends in the resource's Messages API path (`…/anthropic`). */
function endsInMessagesApi(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false
  try {
    return new URL(baseUrl).pathname.replace(/\/+$/, '').endsWith(MESSAGES_API)
  } catch {
    return false
  }
}

function foundryProvider(below: string): Provider {
  return {
    name: 'foundry',
    pricingId: 'anthropic',
    defaultBaseUrl: null,
    // A base URL ending in `/anthropic` holds that part of the path: the route then ends there too,
    // so `…/foundry/anthropic/v1/messages` goes to `<base_url>/v1/messages` either way.
    mount: below === '' ? `/foundry${MESSAGES_API}` : '/foundry',
    credentials: ['x-api-key', 'api-key', 'authorization'],
    noUpstreamHint: 'set providers.foundry.base_url in the config to your Foundry resource (https://<resource>.services.ai.azure.com)',
    inspect: (req) => inspectFoundry(req, below),
    meter: (shape) => new AnthropicMeter(shape.fast === true),
    configure: (s: ProviderSettings) => foundryProvider(endsInMessagesApi(s.base_url) ? '' : MESSAGES_API),
  }
}

export const foundry: Provider = foundryProvider(MESSAGES_API)
