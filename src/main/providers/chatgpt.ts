import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import type { Provider } from './types'

/**
 * The ChatGPT backend that Codex CLI talks to when logged in with ChatGPT (a plan, not an API
 * key): its base URL is `https://chatgpt.com/backend-api/codex` (codex-rs model_provider_info.rs),
 * speaking the Responses API. Burnrate's `/chatgpt` stands for `https://chatgpt.com/backend-api`.
 * Codex reaches it at `<burnrate>/chatgpt/codex`, or through the `openai_base_url` an API key
 * uses (`<burnrate>/v1`): the router sends a call that carries `chatgpt-account-id` here
 * (../proxy/routes.ts). Calls are priced as OpenAI's models (their API-equivalent value) and
 * recorded with `billing: "subscription"`.
 */
export const chatgpt: Provider = {
  name: 'chatgpt',
  pricingId: 'openai',
  defaultBaseUrl: 'https://chatgpt.com/backend-api',
  mount: '/chatgpt',
  inspect: (req) => inspectOpenAI({ ...req, path: req.path.replace(/^\/codex(?=\/)/, '') }),
  meter: (shape) => new OpenAIMeter({ endpoint: shape.endpoint }),
}
