import { count, isObject } from '../metering/usage'
import { anthropicCompatible } from './anthropic-compatible'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'

/**
 * DeepSeek: https://api-docs.deepseek.com (its docs give `https://api.deepseek.com` and say
 * `/v1` works as well). Cache hits are reported as `prompt_cache_hit_tokens`, a part of
 * `prompt_tokens`.
 *
 * Its Anthropic-compatible API (api-docs.deepseek.com, "Anthropic API") is at
 * `https://api.deepseek.com/anthropic`, what Claude Code is given as `ANTHROPIC_BASE_URL`, so
 * through Burnrate `…/deepseek/anthropic`. Its usage is Anthropic's: `input_tokens` without the
 * `cache_read_input_tokens` DeepSeek reports beside it (its `prompt_tokens` is their sum).
 */
const compatible = openaiCompatible({
  name: 'deepseek',
  pricingId: 'deepseek',
  baseUrl: 'https://api.deepseek.com/v1',
  usage: (raw) => {
    const u = openaiUsage(raw)
    if (u && isObject(raw) && u.cache_read_tokens === 0) {
      u.cache_read_tokens = Math.min(count(raw.prompt_cache_hit_tokens), u.input_tokens)
    }
    return u
  },
})

export const deepseek: Provider = {
  ...compatible,
  anthropicApi: anthropicCompatible({ name: 'deepseek', pricingId: 'deepseek', baseUrl: 'https://api.deepseek.com/anthropic' }),
}
