import { type AgentSignature, firstSystemText, header } from './types'

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
