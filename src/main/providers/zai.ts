import { anthropicCompatible } from './anthropic-compatible'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'

/**
 * Z.ai (GLM): https://docs.z.ai. Its OpenAI-compatible API is at `https://api.z.ai/api/paas/v4`
 * (the GLM Coding Plan's at `https://api.z.ai/api/coding/paas/v4`: set `providers.zai.base_url`),
 * mounted at `…/zai/v1` like every OpenAI-compatible provider; its usage is OpenAI's.
 *
 * Its Anthropic-compatible API, what its Claude Code setup gives as `ANTHROPIC_BASE_URL` (Coding
 * Plan included), is `https://api.z.ai/api/anthropic` (through Burnrate `…/zai/anthropic`). Its
 * streams say 0 tokens in `message_start` and count the prompt only in the last `message_delta`
 * (zai-org/GLM-5#139), which the Anthropic meter takes over what `message_start` said. Both are
 * priced from Z.ai's prices (`zai`), never from Zhipu's mainland ones (`zhipuai`, another
 * currency converted, another list): a GLM model Z.ai's price data does not list is unpriced.
 */
const compatible = openaiCompatible({
  name: 'zai',
  pricingId: 'zai',
  baseUrl: 'https://api.z.ai/api/paas/v4',
})

export const zai: Provider = {
  ...compatible,
  anthropicApi: anthropicCompatible({ name: 'zai', pricingId: 'zai', baseUrl: 'https://api.z.ai/api/anthropic' }),
}
