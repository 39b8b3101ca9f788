import type { IncomingHttpHeaders } from 'node:http'
import { isObject } from '../metering/usage'
import { withRefusalReset } from '../plans/codex'
import { readMeter } from '../plans/read'
import type { MeterReading } from '../plans/types'
import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import type { Meter, MeterResult, Provider } from './types'

/**
 * Reads a 429 of the ChatGPT backend (a plan out of its allowance): its x-codex headers give the
 * windows, the full one without a reset, and its body, `{error: {type: 'usage_limit_reached',
 * plan_type, resets_at}}` (older servers `resets_in_seconds`), as codex-rs reads it, says when that
 * window resets (../plans/codex.ts withRefusalReset, as for the refusal on a WebSocket). One reading
 * of both, when the answer has ended: the headers alone when the body says no reset; no usage.
 */
class RefusalMeter implements Meter {
  readonly readsPlanHeaders = true
  private answer: IncomingHttpHeaders = {}
  private at = Date.now()
  private error: unknown
  headers(headers: IncomingHttpHeaders): void {
    this.answer = headers
    this.at = Date.now()
  }
  event(): void {}
  json(body: unknown): void {
    if (isObject(body)) this.error = body.error
  }
  result(): MeterResult {
    const reading: MeterReading | null = readMeter(withRefusalReset(this.answer, this.error), this.at, 'chatgpt')
    return { usage: null, planReading: reading ?? undefined }
  }
}

/**
 * The ChatGPT backend that Codex CLI talks to when logged in with ChatGPT (a plan, not an API
 * key): its base URL is `https://chatgpt.com/backend-api/codex` (codex-rs model_provider_info.rs),
 * speaking the Responses API. Burnrate's `/chatgpt` stands for `https://chatgpt.com/backend-api`.
 * Codex reaches it at `<burnrate>/chatgpt/codex`, or through the `openai_base_url` an API key
 * uses (`<burnrate>/v1`): the router sends a call that carries `chatgpt-account-id` here
 * (../proxy/routes.ts). Calls are priced as OpenAI's models (their API-equivalent value) and
 * recorded with `billing: "subscription"`.
 */
export const chatgpt: Provider = {
  name: 'chatgpt',
  pricingId: 'openai',
  defaultBaseUrl: 'https://chatgpt.com/backend-api',
  mount: '/chatgpt',
  inspect: (req) => inspectOpenAI({ ...req, path: req.path.replace(/^\/codex(?=\/)/, '') }),
  meter: (shape) => new OpenAIMeter({ endpoint: shape.endpoint }),
  refusalMeter: (status) => (status === 429 ? new RefusalMeter() : null),
}
