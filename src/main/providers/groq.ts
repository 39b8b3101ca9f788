import { fileIdOf } from './openai-endpoints'
import { groqBatchMeter } from './groq-batch'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'

const compatible = openaiCompatible({ name: 'groq', pricingId: 'groq', baseUrl: 'https://api.groq.com/openai/v1' })

/**
 * Groq: https://console.groq.com/docs/openai. Stream usage arrives in the last chunk's `x_groq`.
 * A Batch API output file read through Burnrate records its requests (./groq-batch.ts).
 */
export const groq: Provider = {
  ...compatible,
  meter: (shape, req) => (shape.lines ? groqBatchMeter(fileIdOf(req.path)) : compatible.meter(shape, req)),
}
