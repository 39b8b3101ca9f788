import { type AgentSignature, header } from './types'

/**
 * The providers' own SDKs, used bare (no agent on top that names itself). Their Stainless-built
 * clients send `User-Agent: OpenAI/JS 5.x`, `OpenAI/Python 1.x`, `Anthropic/JS 0.x`,
 * `Anthropic/Python 0.x` (plus `x-stainless-*` headers); the Python ones name the client's class
 * (`AsyncOpenAI/Python`, `AzureOpenAI/Python`, `AsyncAnthropic/Python`,
 * `AnthropicBedrock/Python`, `AsyncAnthropicVertex/Python`). The OpenAI .NET library sends
 * `OpenAI/2.x (.NET 8.0.x; …)`. Google's @google/genai and google-genai send
 * `x-goog-api-client: google-genai-sdk/<version> gl-node/...` (or `gl-python/...`).
 */
export const openaiSdk: AgentSignature = {
  name: 'openai-sdk',
  matches: (r) => /^(?:Async)?(?:Azure)?OpenAI\/(JS|Python|Go|Java|Ruby|\.NET|dotnet)\b/i.test(r.ua) || /^OpenAI\/\d[^ ]* \(\.NET\b/i.test(r.ua),
}

export const anthropicSdk: AgentSignature = {
  name: 'anthropic-sdk',
  matches: (r) => /^(?:Async)?Anthropic(?:Bedrock|Vertex|Foundry)?\/(JS|Python|Go|Java|Ruby)\b/i.test(r.ua) || /^anthropic-(python|typescript)\//i.test(r.ua),
}

export const googleGenaiSdk: AgentSignature = {
  name: 'google-genai-sdk',
  matches: (r) => /\bgoogle-genai-sdk\//i.test(header(r.headers, 'x-goog-api-client')),
}
