import { openaiCompatible } from './openai-compatible'

/** Groq: https://console.groq.com/docs/openai. Stream usage arrives in the last chunk's `x_groq`. */
export const groq = openaiCompatible({ name: 'groq', pricingId: 'groq', baseUrl: 'https://api.groq.com/openai/v1' })
