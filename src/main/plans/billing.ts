import type { IncomingHttpHeaders } from 'node:http'
import type { CallBilling } from '../../shared/api'

/**
 * Whether a call is made with a plan's OAuth credential (no money per token): Claude Code
 * logged in with a Claude account sends an OAuth access token `sk-ant-oat…` to Anthropic; Codex
 * logged in with ChatGPT talks to the ChatGPT backend (the `chatgpt` provider), and Gemini CLI
 * logged in with Google to Gemini Code Assist (`code-assist`), whose every call is plan usage.
 */
export function billingOf(provider: string, apiKey: string, _headers: IncomingHttpHeaders): CallBilling {
  if (provider === 'chatgpt' || provider === 'code-assist') return 'subscription'
  if (provider === 'anthropic' && apiKey.startsWith('sk-ant-oat')) return 'subscription'
  return 'api'
}
