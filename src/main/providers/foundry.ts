import { isObject } from '../metering/usage'
import { inspectAnthropic } from './anthropic'
import { AnthropicMeter } from './anthropic-meter'
import type { CallShape, Meter, MeterResult, Provider, ProviderSettings, RequestInfo } from './types'
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
 * API prices (Claude Consumption Units converted from Anthropic's per-model rates), fast mode's
 * too (../pricing/anthropic-fast.ts). The client's key (`x-api-key`, as the Foundry SDKs send it, or Azure's `api-key`) or
 * Microsoft Entra ID token (`Authorization: Bearer`) is passed on as it came.
 *
 * Claude's fast mode is a deployment of a fast-mode model (`fastModeBase`: a Claude model's id
 * ending in `-fast`), not a request's `speed`: recorded as the model without the suffix, marked
 * fast. A deployment of another name ending in `-fast` (`team-opus-fast`) is its user's name, kept.
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
  if (rest !== '/v1/messages' && rest !== '/v1/messages/count_tokens') return { endpoint: 'other', model: '', stream: false, billable: false }
  const shape = inspectAnthropic({ ...req, path: rest })
  // A deployment of a fast-mode model: the model it names, at fast mode (reserved at its fast price).
  const base = shape.billable ? fastModeBase(shape.model) : undefined
  if (base !== undefined) {
    shape.model = base
    shape.fast = true
  }
  return shape
}

/**
 * Claude's fast mode on Foundry has model IDs of its own, the model's ending in `-fast`, and the
 * deployment sets the speed: a request goes to a deployment of the fast-mode model and leaves out
 * `speed` (platform.claude.com/docs/build-with-claude/fast-mode, its Microsoft Foundry note). The
 * model such an id (a deployment named as its model, or an answer's model) is fast mode of, or
 * undefined for any other name.
 */
export function fastModeBase(model: string): string | undefined {
  if (!model.endsWith(FAST_SUFFIX)) return undefined
  const base = model.slice(0, -FAST_SUFFIX.length)
  // A deployment's name is its user's: `team-opus-fast` may be a standard deployment. Only a Claude
  // model's id (`claude-…`, as Anthropic names every model) with the suffix is a fast-mode model's.
  return CLAUDE_MODEL_ID.test(base) ? base : undefined
}

const FAST_SUFFIX = '-fast'
/** The shape of Anthropic's model ids: `claude-opus-4-6`, `claude-3-5-haiku-20241022`. */
const CLAUDE_MODEL_ID = /^claude-[a-z0-9][a-z0-9.-]*$/

/**
 * A Foundry Messages answer, read as Anthropic's, of a deployment that may be a fast-mode model's:
 * such a call (its deployment's name, else its answer's model, is a Claude model's id ending in
 * `-fast`) is recorded as
 * the model without the suffix and marked fast, unless its usage said which speed served it
 * (`speed: "standard"`). A request's `speed: "fast"` is read as on the Claude API.
 */
class FoundryMeter implements Meter {
  private readonly inner: AnthropicMeter

  /**
   * @param askedFast the request asked for fast mode (`CallShape.fast`: its deployment is a
   *   fast-mode model's, or its body's `speed: "fast"`): an answer cut before its usage said the
   *   speed is estimated at it.
   * @param fastDeployment the request's deployment is named as a fast-mode model (`fastModeBase`).
   */
  constructor(
    askedFast: boolean,
    private readonly fastDeployment: boolean,
  ) {
    this.inner = new AnthropicMeter(askedFast)
  }

  event(name: string, data: string): void {
    this.inner.event(name, data)
  }

  json(body: unknown): void {
    this.inner.json(body)
  }

  jsonCut(body: string): void {
    this.inner.jsonCut(body)
  }

  result(): MeterResult {
    const r = this.inner.result()
    const base = r.model === undefined ? undefined : fastModeBase(r.model)
    const named = base === undefined ? r : { ...r, model: base }
    if (!this.fastDeployment && base === undefined) return named
    if (named.usage) return named.usage.fast || this.inner.saidSpeed ? named : { ...named, usage: { ...named.usage, fast: true } }
    return named.billedSoFar?.fast ? named : { ...named, billedSoFar: { ...named.billedSoFar, fast: true } }
  }
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
    meter: (shape, req) => new FoundryMeter(shape.fast === true, isObject(req.body) && typeof req.body.model === 'string' && fastModeBase(req.body.model) !== undefined),
    configure: (s: ProviderSettings) => foundryProvider(endsInMessagesApi(s.base_url) ? '' : MESSAGES_API),
  }
}

export const foundry: Provider = foundryProvider(MESSAGES_API)
