import type { IncomingHttpHeaders } from 'node:http'
import { ConverseMeter, namesTier, servedPriority } from './bedrock-converse'
import { InvokeMeter, isClaude } from './bedrock-invoke'
import { askedSpeed, bedrockPlace, inspectBedrock, isOpenAIApi, pathNamesModel } from './bedrock-paths'
import { OpenAIMeter } from './openai-meter'
import type { Meter, MeterResult, Provider, ProviderSettings } from './types'

/**
 * Amazon Bedrock, with a Bedrock API key (`Authorization: Bearer`, Claude Code's
 * `AWS_BEARER_TOKEN_BEDROCK`). Burnrate's address names the region, `/bedrock/{region}`, because
 * Bedrock's does and its calls' paths do not: `…/bedrock/us-east-1/model/{id}/invoke` goes to
 * `https://bedrock-runtime.us-east-1.amazonaws.com/model/{id}/invoke`, and the control plane's
 * paths (`/inference-profiles`, `/foundation-models`, …, which Claude Code asks the same address)
 * to `https://bedrock.us-east-1.amazonaws.com`. With `providers.bedrock.base_url` set, every
 * region's calls go there instead (a gateway), the region left out of the path.
 *
 * - InvokeModel (`/model/{id}/invoke`, and `/invoke-with-response-stream`, whose answer is AWS's
 *   binary event stream: each `chunk` carries one of the model's events, base64 in `bytes`) of a
 *   Claude model takes and answers Anthropic's Messages API: metered as Anthropic's answers are.
 *   Other models' own formats are not read: their streams are counted by Bedrock's own metrics
 *   in the last event (cache reads and writes included), their JSON answers by its count in the
 *   answer's headers; the Converse API is read for every model.
 * - Converse (`/model/{id}/converse`, `/converse-stream`): `usage` {inputTokens, outputTokens,
 *   cacheReadInputTokens, cacheWriteInputTokens}, in the answer or the stream's `metadata` event.
 * - The OpenAI-compatible API (`/openai/v1/chat/completions`, the OpenAI SDK with a Bedrock API
 *   key): OpenAI's answers, priced as the Bedrock model id the request names.
 *
 * A call is priced as the model id of its path (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`,
 * or the id a system inference profile's ARN ends in) with the price library's AWS prices, which
 * tell a cross-region (`us.`, `eu.`, ...) profile's rate from a `global.` one's. An application
 * inference profile's ARN names no model: `providers.bedrock.profiles` maps it to one, else the
 * answer's name for the model prices it.
 *
 * A request signed with AWS Signature Version 4 (access keys, SSO) cannot pass through any proxy:
 * the signature covers the host it was sent to. Bedrock API keys can.
 *
 * This file puts the provider together; where a call goes and what it is: ./bedrock-paths.ts;
 * the meters: ./bedrock-invoke.ts and ./bedrock-converse.ts; the event stream's messages:
 * ./bedrock-event-stream.ts.
 */

function bedrockProvider(profiles: Record<string, string>): Provider {
  return {
    name: 'bedrock',
    pricingId: 'aws',
    defaultBaseUrl: null,
    mount: '/bedrock',
    credentials: ['authorization'],
    place: bedrockPlace,
    noUpstreamHint: 'put the region in its address (http://<burnrate>/bedrock/us-east-1) or set providers.bedrock.base_url in the config',
    inspect: (req) => inspectBedrock(req, profiles),
    meter: (shape, req): Meter =>
      isOpenAIApi(req.path)
        ? new BedrockOpenAIMeter(shape.endpoint, shape.fast === true)
        : shape.endpoint === 'converse'
          ? new ConverseMeter(askedSpeed(req, shape.endpoint))
          : new InvokeMeter(isClaude(shape.model), pathNamesModel(req.path, profiles), askedSpeed(req, shape.endpoint)),
    configure: (s: ProviderSettings) => bedrockProvider(s.profiles ?? {}),
  }
}

/**
 * The OpenAI-compatible API's answers: priced as the Bedrock model id the request names (the price
 * data's), whatever the answer calls it. Its usage names no tier: an `X-Amzn-Bedrock-Service-Tier`
 * header of the answer saying `priority` marks it fast, as InvokeModel's does (./bedrock-invoke.ts).
 */
class BedrockOpenAIMeter extends OpenAIMeter {
  /** The answer's headers say its Priority tier served it (`servedPriority`). */
  private priority = false
  /** The answer's headers named the tier that served it, whichever (`namesTier`). */
  private tierNamed = false

  /**
   * @param askedPriority the request asked for the Priority tier (the `X-Amzn-Bedrock-Service-Tier`
   *   header or the body's `service_tier`, `CallShape.fast`): an answer that ends before its usage
   *   (a stream cut before its last chunk) is estimated at that tier, as it was reserved, unless
   *   its headers named the tier that served it.
   */
  constructor(endpoint: string, private readonly askedPriority: boolean) {
    super({ endpoint })
  }

  headers(h: IncomingHttpHeaders): void {
    const tier = h['x-amzn-bedrock-service-tier']
    this.tierNamed = namesTier(tier)
    this.priority = servedPriority(tier)
  }

  override result(): MeterResult {
    const { model: _answered, ...r } = super.result()
    // A usage the answer reported is at the tier its headers named; an estimate (no usage, or a
    // running count cut mid-stream) at that tier, else the one asked for.
    const fast = r.usage && !r.partialOutput ? this.priority : this.tierNamed ? this.priority : this.askedPriority
    if (!fast) return r
    if (r.usage) return r.usage.fast ? r : { ...r, usage: { ...r.usage, fast: true } }
    return r.billedSoFar?.fast ? r : { ...r, billedSoFar: { ...r.billedSoFar, fast: true } }
  }
}

export const bedrock: Provider = bedrockProvider({})
