import { openaiCompatible } from './openai-compatible'

/**
 * xAI (Grok): https://docs.x.ai/docs/api-reference. Its reasoning tokens are reported beside
 * `completion_tokens` (see `openaiUsage`).
 */
export const xai = openaiCompatible({ name: 'xai', pricingId: 'x-ai', baseUrl: 'https://api.x.ai/v1' })
