import { openaiCompatible } from './openai-compatible'

/** Cerebras Inference: https://inference-docs.cerebras.ai/resources/openai. */
export const cerebras = openaiCompatible({ name: 'cerebras', pricingId: 'cerebras', baseUrl: 'https://api.cerebras.ai/v1' })
