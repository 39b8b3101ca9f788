import { isObject } from '../metering/usage'
import { AnthropicBatchMeter, anthropicBatchShape, batchIdOf, relinkResultsUrls } from './anthropic-batch'
import { AnthropicMeter } from './anthropic-meter'
import { anthropicCompatUsage } from './anthropic-usage'
import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import type { CallShape, Provider, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

export function inspectAnthropic(req: RequestInfo): CallShape {
  const p = withoutTrailingSlashes(req.path)
  const body = isObject(req.body) ? req.body : undefined
  // Anthropic's OpenAI SDK compatibility: `<base>/v1/chat/completions`, billed as Messages are.
  if (req.method === 'POST' && p === '/v1/chat/completions') return inspectOpenAI({ ...req, path: '/chat/completions' })
  const isMessages = req.method === 'POST' && p === '/v1/messages'
  const batch = isMessages ? null : anthropicBatchShape(req.method, p)
  if (batch) return { model: '', stream: false, billable: false, ...batch }
  const shape: CallShape = {
    endpoint: isMessages ? 'messages' : p === '/v1/messages/count_tokens' ? 'count_tokens' : 'other',
    model: typeof body?.model === 'string' ? body.model : '',
    stream: body?.stream === true,
    billable: isMessages,
  }
  if (isMessages && body?.inference_geo === 'us') shape.dataResidency = true
  if (isMessages && body?.speed === 'fast') shape.fast = true
  return shape
}

export const anthropic: Provider = {
  name: 'anthropic',
  pricingId: 'anthropic',
  defaultBaseUrl: 'https://api.anthropic.com',
  mount: '/anthropic',
  credentials: ['x-api-key', 'authorization'],
  inspect: inspectAnthropic,
  // A batch's requests (up to 256 MB) name nothing the call is metered by: its shape is its path's,
  // and no agent's signature reads a batch (theirs are in a call's own top-level fields).
  streamsJson: (method, path) => method === 'POST' && path.startsWith('/v1/messages/batches') && anthropicBatchShape(method, withoutTrailingSlashes(path))?.endpoint === 'messages.batches.create',
  meter: (shape, req) =>
    shape.lines
      ? new AnthropicBatchMeter(batchIdOf(req.path))
      : shape.endpoint === 'chat.completions'
        ? new OpenAIMeter({ endpoint: shape.endpoint, usage: anthropicCompatUsage })
        : new AnthropicMeter(shape.fast === true),
  relink: relinkResultsUrls,
}
