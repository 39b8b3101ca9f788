import { count, isObject } from '../metering/usage'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'

/**
 * DeepSeek: https://api-docs.deepseek.com (its docs give `https://api.deepseek.com` and say
 * `/v1` works as well). Cache hits are reported as `prompt_cache_hit_tokens`, a part of
 * `prompt_tokens`.
 */
export const deepseek = openaiCompatible({
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
