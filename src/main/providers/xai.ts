import { openaiCompatible } from './openai-compatible'

/** xAI (Grok): https://docs.x.ai/docs/api-reference. */
export const xai = openaiCompatible({ name: 'xai', pricingId: 'x-ai', baseUrl: 'https://api.x.ai/v1' })
