import { count, isObject } from '../metering/usage'
import { anthropicCompatible } from './anthropic-compatible'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'

/**
 * Moonshot AI (Kimi): https://platform.moonshot.ai/docs. Its OpenAI-compatible API is at
 * `https://api.moonshot.ai/v1` (`https://api.moonshot.cn/v1` in China: set
 * `providers.moonshot.base_url`). `prompt_tokens` includes the cache hit, which it reports as a
 * top-level `cached_tokens` (newer answers also as `prompt_tokens_details.cached_tokens`). A stream
 * puts that usage in its finishing choice (`choices[0].usage`), which the OpenAI meter reads
 * (./openai-meter.ts, `choiceUsage`), not at the chunk's top level.
 *
 * Its Anthropic-compatible API, what its Claude Code setup gives as `ANTHROPIC_BASE_URL`, is
 * `https://api.moonshot.ai/anthropic` (through Burnrate `…/moonshot/anthropic`), taking the key as
 * `x-api-key` or `Authorization: Bearer`. Both are priced from Moonshot's own prices.
 */
const compatible = openaiCompatible({
  name: 'moonshot',
  pricingId: 'moonshotai',
  baseUrl: 'https://api.moonshot.ai/v1',
  usage: (raw) => {
    const u = openaiUsage(raw)
    if (u && isObject(raw) && u.cache_read_tokens === 0) u.cache_read_tokens = Math.min(count(raw.cached_tokens), u.input_tokens)
    return u
  },
})

export const moonshot: Provider = {
  ...compatible,
  anthropicApi: anthropicCompatible({ name: 'moonshot', pricingId: 'moonshotai', baseUrl: 'https://api.moonshot.ai/anthropic' }),
}
