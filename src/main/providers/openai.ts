import { OpenAIBatchMeter } from './openai-batch'
import { fileIdOf, inspectOpenAI, requestTier, withChatSearch, withFastTier } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import type { Provider } from './types'

/**
 * OpenAI's API: what a request is (./openai-endpoints.ts), how its answers are metered
 * (./openai-meter.ts, usage read by ./openai-usage.ts, a stream's events told apart by
 * ./openai-stream-events.ts and its text kept for an estimate by ./openai-stream-text.ts), and a
 * Batch API's results file (./openai-batch.ts). A Chat Completions search model's answer is one web
 * search (`withChatSearch`).
 */
export const openai: Provider = {
  name: 'openai',
  pricingId: 'openai',
  defaultBaseUrl: 'https://api.openai.com/v1',
  mount: '/openai/v1',
  inspect: (req) => withChatSearch(withFastTier(inspectOpenAI(req), req.body), req.body),
  meter: (shape, req) =>
    shape.lines ? new OpenAIBatchMeter('openai', fileIdOf(req.path)) : new OpenAIMeter({ endpoint: shape.endpoint, openaiTiers: true, requestTier: requestTier(req.body) }),
}
