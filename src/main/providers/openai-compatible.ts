import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import { type UsageReader } from './openai-usage'
import type { Provider } from './types'

export interface CompatibleOptions {
  /** Route and ledger name; the provider is mounted at `/<name>/v1`. */
  name: string
  /** The provider id in @pydantic/genai-prices. */
  pricingId: string
  /** The provider's own base URL, the one its docs give to the OpenAI SDK (path included). */
  baseUrl: string
  /** Reads the provider's `usage` object where it differs from OpenAI's. */
  usage?: UsageReader
}

/**
 * A provider that speaks OpenAI's API (`/chat/completions`, `/completions`, `/embeddings`,
 * `/responses`, ...). Mounted at `/<name>/v1`, which stands for `baseUrl`: a client whose SDK
 * base URL is `http://127.0.0.1:8787/groq/v1` reaches `https://api.groq.com/openai/v1`.
 */
export function openaiCompatible(o: CompatibleOptions): Provider {
  return {
    name: o.name,
    pricingId: o.pricingId,
    defaultBaseUrl: o.baseUrl,
    mount: `/${o.name}/v1`,
    inspect: inspectOpenAI,
    meter: (shape) => new OpenAIMeter({ endpoint: shape.endpoint, usage: o.usage }),
  }
}
