import { anthropic } from './anthropic'
import { azure } from './azure'
import { bedrock } from './bedrock'
import { cerebras } from './cerebras'
import { chatgpt } from './chatgpt'
import { codeAssist } from './code-assist'
import { deepseek } from './deepseek'
import { fireworks } from './fireworks'
import { foundry } from './foundry'
import { gemini } from './gemini'
import { groq } from './groq'
import { mistral } from './mistral'
import { moonshot } from './moonshot'
import { openai } from './openai'
import { openrouter } from './openrouter'
import { perplexity } from './perplexity'
import { together } from './together'
import { vertex } from './vertex'
import { xai } from './xai'
import { zai } from './zai'
import type { Provider } from './types'

/** Every provider Burnrate knows. Adding one is one file and one line here. */
export const PROVIDERS: readonly Provider[] = [
  openai,
  anthropic,
  gemini,
  azure,
  vertex,
  bedrock,
  foundry,
  openrouter,
  groq,
  mistral,
  deepseek,
  xai,
  together,
  fireworks,
  cerebras,
  perplexity,
  moonshot,
  zai,
  chatgpt,
  codeAssist,
]

export const PROVIDER_NAMES: readonly string[] = PROVIDERS.map((p) => p.name)
