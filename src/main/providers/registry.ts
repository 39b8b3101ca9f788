import { anthropic } from './anthropic'
import { openai } from './openai'
import type { Provider } from './types'

/** Every provider Burnrate knows. Adding one is one file and one line here. */
export const PROVIDERS: readonly Provider[] = [openai, anthropic]

export const PROVIDER_NAMES: readonly string[] = PROVIDERS.map((p) => p.name)
