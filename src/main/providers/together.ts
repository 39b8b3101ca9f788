import { fileIdOf } from './openai-endpoints'
import { openaiCompatible } from './openai-compatible'
import { togetherBatchMeter } from './together-batch'
import type { Provider } from './types'

const compatible = openaiCompatible({ name: 'together', pricingId: 'together', baseUrl: 'https://api.together.xyz/v1' })

/**
 * Together AI: https://docs.together.ai/docs/openai-api-compatibility. A Batch API output file
 * read through Burnrate records its requests (./together-batch.ts).
 */
export const together: Provider = {
  ...compatible,
  meter: (shape, req) => (shape.lines ? togetherBatchMeter(fileIdOf(req.path)) : compatible.meter(shape, req)),
}
