import { type AgentSignature, header } from './types'

/**
 * The providers' own SDKs, used bare (no agent on top that names itself). Their Stainless-built
 * clients send `User-Agent: OpenAI/JS 5.x`, `OpenAI/Python 1.x`, `Anthropic/JS 0.x`,
 * `Anthropic/Python 0.x` (plus `x-stainless-*` headers); Google's @google/genai and google-genai
 * send `x-goog-api-client: google-genai-sdk/<version> gl-node/...` (or `gl-python/...`).
 */
export const openaiSdk: AgentSignature = {
  name: 'openai-sdk',
  matches: (r) => /^OpenAI\/(JS|Python|Go|Java|Ruby|\.NET|dotnet)\b/i.test(r.ua),
}

export const anthropicSdk: AgentSignature = {
  name: 'anthropic-sdk',
  matches: (r) => /^Anthropic\/(JS|Python|Go|Java|Ruby)\b/i.test(r.ua) || /^anthropic-(python|typescript)\//i.test(r.ua),
}

export const googleGenaiSdk: AgentSignature = {
  name: 'google-genai-sdk',
  matches: (r) => /\bgoogle-genai-sdk\//i.test(header(r.headers, 'x-goog-api-client')),
}
