/**
 * The names people know Burnrate's providers by, for the dashboard's cells and legends. The API,
 * the config, budget rules and URLs keep the ids (`foundry`, `code-assist`); an id not listed here
 * (a newer server's) is shown as it is.
 */
const NAMES: Readonly<Record<string, string>> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  gemini: 'Gemini API',
  azure: 'Azure OpenAI',
  vertex: 'Vertex AI',
  bedrock: 'Amazon Bedrock',
  foundry: 'Microsoft Foundry',
  openrouter: 'OpenRouter',
  groq: 'Groq',
  mistral: 'Mistral',
  deepseek: 'DeepSeek',
  xai: 'xAI',
  together: 'Together AI',
  fireworks: 'Fireworks AI',
  cerebras: 'Cerebras',
  perplexity: 'Perplexity',
  moonshot: 'Moonshot AI',
  zai: 'Z.ai',
  chatgpt: 'ChatGPT plan (Codex)',
  'code-assist': 'Gemini Code Assist',
}

/** `foundry` → `Microsoft Foundry`; an unknown id as it is. */
export function providerName(id: string): string {
  return Object.hasOwn(NAMES, id) ? NAMES[id]! : id
}

/** Whether `id` has a name of its own here (for the test that keeps this list in step with the providers). */
export function hasProviderName(id: string): boolean {
  return Object.hasOwn(NAMES, id)
}
