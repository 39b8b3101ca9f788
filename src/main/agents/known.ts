import { aider } from './aider'
import { claudeCode } from './claude-code'
import { codex } from './codex'
import { cursor } from './cursor'
import { geminiCli } from './gemini-cli'
import { opencode } from './opencode'
import { anthropicSdk, googleGenaiSdk, openaiSdk } from './sdks'
import type { AgentSignature } from './types'
import { cline, continueDev, copilot, qwenCode } from './ua-only'

/**
 * The clients Burnrate recognises, most specific first: agents before the SDKs they are built
 * on (Aider sends the OpenAI SDK's User-Agent; Gemini CLI the genai SDK's header). Adding one is
 * one file and one line here.
 */
export const AGENTS: readonly AgentSignature[] = [
  claudeCode,
  codex,
  geminiCli,
  opencode,
  cursor,
  aider,
  continueDev,
  cline,
  qwenCode,
  copilot,
  openaiSdk,
  anthropicSdk,
  googleGenaiSdk,
]
