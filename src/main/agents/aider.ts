import { isObject } from '../metering/usage'
import { type AgentSignature, type ClientRequest, header } from './types'

/**
 * Aider talks through litellm, so its User-Agent is the bare OpenAI Python SDK's (or
 * litellm's). It names itself to OpenRouter (`X-Title: Aider`, `HTTP-Referer:
 * https://aider.chat`, set in aider/llm.py), and every one of its chat modes opens with its own
 * system prompt: "Act as an expert software developer" (code modes), "... architect engineer",
 * "... code analyst" (aider/coders/*_prompts.py). litellm puts the system prompt in the provider's
 * place: Anthropic's `system`, the first chat message, or Gemini's and Vertex AI's
 * `system_instruction.parts` (sent with `User-Agent: litellm/<version>`).
 */
export const aider: AgentSignature = {
  name: 'aider',
  matches: (r) =>
    /^aider$/i.test(header(r.headers, 'x-title')) ||
    /^https?:\/\/aider\.chat/i.test(header(r.headers, 'http-referer')) ||
    AIDER_SYSTEM.test(firstSystemText(r)),
}

const AIDER_SYSTEM = /^Act as an expert (software developer|architect engineer|code analyst)\b/

function firstSystemText(r: ClientRequest): string {
  const b = r.body
  if (!isObject(b)) return ''
  if (typeof b.system === 'string') return b.system
  if (Array.isArray(b.system) && isObject(b.system[0]) && typeof b.system[0].text === 'string') return b.system[0].text
  const gemini = b.system_instruction ?? b.systemInstruction
  if (isObject(gemini) && Array.isArray(gemini.parts) && isObject(gemini.parts[0]) && typeof gemini.parts[0].text === 'string') {
    return gemini.parts[0].text
  }
  const first = Array.isArray(b.messages) ? b.messages[0] : undefined
  if (!isObject(first) || first.role !== 'system') return ''
  if (typeof first.content === 'string') return first.content
  if (Array.isArray(first.content) && isObject(first.content[0]) && typeof first.content[0].text === 'string') {
    return first.content[0].text
  }
  return ''
}
