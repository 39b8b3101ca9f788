import type { Attributes } from '@opentelemetry/api'
import type { CallRecord } from '../ledger/record'
import { billingLabel } from '../metrics/labels'

/**
 * The OpenTelemetry GenAI semantic conventions as Burnrate uses them (names as in
 * @opentelemetry/semantic-conventions' incubating GenAI attributes, written out here because
 * the package keeps them under its unstable entry point).
 */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  /** Deprecated in favour of gen_ai.provider.name; still what many backends group by, so sent too. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  stream: 'gen_ai.request.stream',
  conversation: 'gen_ai.conversation.id',
  agent: 'gen_ai.agent.name',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheRead: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreation: 'gen_ai.usage.cache_creation.input_tokens',
  reasoning: 'gen_ai.usage.reasoning.output_tokens',
  /**
   * Cost in US dollars. Not in the conventions yet: `gen_ai.usage.cost` is where the open
   * proposals put it (see the README, OpenTelemetry export).
   */
  cost: 'gen_ai.usage.cost',
  tokenType: 'gen_ai.token.type',
  tokenUsage: 'gen_ai.client.token.usage',
  duration: 'gen_ai.client.operation.duration',
} as const

export const ERROR_TYPE = 'error.type'
export const HTTP_STATUS = 'http.response.status_code'

/** Burnrate's own attributes, for what the conventions have no name for. */
export const BURNRATE = {
  tenant: 'burnrate.tenant',
  /** Burnrate's own provider name (`chatgpt`, `code-assist`, `foundry`...), on spans, where `gen_ai.provider.name` is the conventions'. */
  provider: 'burnrate.provider',
  /** `api` (money) or `subscription` (a plan's call: its cost is an API-equivalent value, not spend). */
  billing: 'burnrate.billing',
  endpoint: 'burnrate.endpoint',
  priced: 'burnrate.priced',
  estimated: 'burnrate.estimated',
  tokens: 'burnrate.tokens',
  tokenType: 'burnrate.token.type',
  /** What recorded calls cost less after they were recorded (re-priced lower): spend is gen_ai.usage.cost minus this. */
  costReductions: 'burnrate.cost.reductions',
  /** How many tokens recorded calls have fewer after they were recorded (an estimate replaced by the real usage): the tokens are burnrate.tokens minus this. */
  tokenReductions: 'burnrate.tokens.reductions',
} as const

/**
 * Burnrate's provider names as `gen_ai.provider.name` values (the well-known ones where there is
 * one): a plan's backend or a cloud's is named by what it is, as the conventions list them, and
 * spans keep Burnrate's own in `burnrate.provider`.
 */
const PROVIDER_NAMES: Record<string, string> = {
  // Codex logged in with ChatGPT: OpenAI's models on OpenAI's backend.
  chatgpt: 'openai',
  // Gemini Code Assist: a Google generative AI endpoint that is neither the Gemini API nor Vertex AI.
  'code-assist': 'gcp.gen_ai',
  // Claude on Microsoft Foundry: Azure AI Inference (Foundry's models), not Azure OpenAI.
  foundry: 'azure.ai.inference',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
  mistral: 'mistral_ai',
  xai: 'x_ai',
}

/** The older `gen_ai.system` values, where they differ from the provider's. */
const SYSTEM_NAMES: Record<string, string> = {
  chatgpt: 'openai',
  'code-assist': 'gcp.gen_ai',
  foundry: 'az.ai.inference',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'az.ai.openai',
  mistral: 'mistral_ai',
  xai: 'xai',
}

export function providerName(provider: string): string {
  return PROVIDER_NAMES[provider] ?? provider
}

export function systemName(provider: string): string {
  return SYSTEM_NAMES[provider] ?? provider
}

/** The ledger's endpoint name as a `gen_ai.operation.name`. */
export function operationName(endpoint: string): string {
  switch (endpoint) {
    case 'chat.completions':
    case 'async.chat.completions':
    case 'messages':
    case 'responses':
    case 'interactions':
      return 'chat'
    case 'agents.completions':
      return 'invoke_agent'
    case 'completions':
    case 'fim.completions':
      return 'text_completion'
    case 'embeddings':
    case 'embedContent':
    case 'batchEmbedContents':
      return 'embeddings'
    case 'generateContent':
    case 'streamGenerateContent':
      return 'generate_content'
    default:
      return endpoint
  }
}

/** What went wrong, as `error.type`: Burnrate's reason, else the status code of an error answer. */
export function errorType(call: CallRecord): string | undefined {
  if (call.error) return call.error
  return call.status >= 400 ? String(call.status) : undefined
}

/** One span's attributes: everything the ledger knows of the call but the API key. */
export function spanAttributes(call: CallRecord): Attributes {
  const a: Attributes = {
    [GEN_AI.operation]: operationName(call.endpoint),
    [GEN_AI.provider]: providerName(call.provider),
    [GEN_AI.system]: systemName(call.provider),
    [GEN_AI.requestModel]: call.model,
    [GEN_AI.stream]: call.streamed,
    [GEN_AI.inputTokens]: call.input_tokens,
    [GEN_AI.outputTokens]: call.output_tokens,
    [GEN_AI.cacheRead]: call.cache_read_tokens,
    [GEN_AI.cacheCreation]: call.cache_write_tokens,
    [GEN_AI.reasoning]: call.reasoning_tokens,
    [GEN_AI.cost]: call.cost_usd,
    // The status the client got (README): a refusal sent as a 403 is recorded as its 429.
    [HTTP_STATUS]: call.client_status ?? call.status,
    [BURNRATE.provider]: call.provider,
    [BURNRATE.endpoint]: call.endpoint,
    [BURNRATE.priced]: call.priced,
    [BURNRATE.estimated]: call.estimated,
    [BURNRATE.billing]: billingLabel(call.billing),
  }
  // The response model on success only (README): a 200 whose stream ended in an error (Anthropic's
  // mid-stream overloaded_error) is a failed call, its span's status ERROR.
  const err = errorType(call)
  if (!err) a[GEN_AI.responseModel] = call.model
  if (call.session) a[GEN_AI.conversation] = call.session
  if (call.agent) a[GEN_AI.agent] = call.agent
  if (call.tenant) a[BURNRATE.tenant] = call.tenant
  if (err) a[ERROR_TYPE] = err
  return a
}

/** The span's name, as the conventions give it: `{operation} {model}`. */
export function spanName(call: CallRecord): string {
  const op = operationName(call.endpoint)
  return call.model ? `${op} ${call.model}` : op
}
