import { count, isObject } from '../metering/usage'
import { ConversationsMeter, conversationsShape, CONVERSATION } from './mistral-conversations'
import { annotated, inspectOcr, OcrMeter } from './mistral-ocr'
import { fileIdOf } from './openai-endpoints'
import { mistralBatchMeter, mistralBatchShape } from './mistral-batch'
import { openaiUsage, type UsageReader } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { CallShape, Provider, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Mistral La Plateforme: https://docs.mistral.ai/api (streams end with a usage chunk). Its usage
 * adds `prompt_audio_seconds`, the length of the audio in the prompt: what a transcription
 * (`/audio/transcriptions`, Voxtral Mini Transcribe) is billed by, per minute, whatever its
 * tokens. It is read as the audio length (`audio_seconds`), which the price data prices for a
 * model billed so and leaves out for one billed by tokens (Voxtral Small in a chat). Its OCR
 * (`/ocr`) is billed by the page (./mistral-ocr.ts). Its Agents API (`POST /agents/completions`,
 * `{agent_id, messages}`) answers as Chat Completions does, the model the agent runs named only in
 * the answer: metered as a chat completion, recorded as `agents.completions`; its Conversations
 * API (`POST /conversations`, its appends and restarts) is metered by ./mistral-conversations.ts. A Batch API output
 * file read through Burnrate records its requests (./mistral-batch.ts).
 */
const mistralUsage: UsageReader = (raw) => {
  const u = openaiUsage(raw)
  const seconds = u && isObject(raw) ? count(raw.prompt_audio_seconds) : 0
  if (u && seconds > 0) u.extra = { ...u.extra, audio_seconds: seconds }
  return u
}

const compatible = openaiCompatible({ name: 'mistral', pricingId: 'mistral', baseUrl: 'https://api.mistral.ai/v1', usage: mistralUsage })

const AGENTS = 'agents.completions'

/**
 * `POST /agents/completions`: a chat completion by an agent, or null for any other request. The
 * request names no model, only its agent (`agent_id`), which stands for it as the requested model:
 * a `block` rule reserves its calls at the price of the model its last answer named (an agent
 * runs one model), as an Azure deployment's; with no name at all they reserved $0, every one.
 */
function inspectAgents(req: RequestInfo): CallShape | null {
  if (req.method !== 'POST' || withoutTrailingSlashes(req.path) !== '/agents/completions') return null
  const agent = isObject(req.body) && typeof req.body.agent_id === 'string' ? req.body.agent_id : ''
  return { ...compatible.inspect({ ...req, path: '/chat/completions' }), endpoint: AGENTS, model: agent }
}

export const mistral: Provider = {
  ...compatible,
  inspect: (req) => inspectOcr(req) ?? inspectAgents(req) ?? conversationsShape(req) ?? mistralBatchShape(req) ?? compatible.inspect(req),
  meter: (shape, req) =>
    shape.endpoint === 'ocr'
      ? new OcrMeter(annotated(req.body))
      : shape.endpoint === CONVERSATION
        ? new ConversationsMeter(mistralUsage)
        : shape.lines
          ? mistralBatchMeter(fileIdOf(req.path), mistralUsage)
          : compatible.meter(shape.endpoint === AGENTS ? { ...shape, endpoint: 'chat.completions' } : shape, req),
}
