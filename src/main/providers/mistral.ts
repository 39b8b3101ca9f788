import { openaiCompatible } from './openai-compatible'

/** Mistral La Plateforme: https://docs.mistral.ai/api (streams end with a usage chunk). */
export const mistral = openaiCompatible({ name: 'mistral', pricingId: 'mistral', baseUrl: 'https://api.mistral.ai/v1' })
