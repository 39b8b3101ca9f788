import { openaiCompatible } from './openai-compatible'

/** Together AI: https://docs.together.ai/docs/openai-api-compatibility. */
export const together = openaiCompatible({ name: 'together', pricingId: 'together', baseUrl: 'https://api.together.xyz/v1' })
