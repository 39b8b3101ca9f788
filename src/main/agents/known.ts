import { aider } from './aider'
import { claudeCode } from './claude-code'
import { cline } from './cline'
import { codex } from './codex'
import { cursor } from './cursor'
import { geminiCli } from './gemini-cli'
import { opencode } from './opencode'
import { qwenCode } from './qwen-code'
import { anthropicSdk, googleGenaiSdk, openaiSdk } from './sdks'
import type { AgentSignature } from './types'
import { continueDev, copilot } from './ua-only'

/**
 * The clients Burnrate recognises, most specific first: agents before the SDKs they are built
 * on (Aider sends the OpenAI SDK's User-Agent; Gemini CLI the genai SDK's header), and Qwen Code
 * before Claude Code, whose User-Agent it sends to an Anthropic-compatible API. Adding one is
 * one file and one line here.
 */
export const AGENTS: readonly AgentSignature[] = [
  qwenCode,
  claudeCode,
  codex,
  geminiCli,
  opencode,
  cursor,
  aider,
  continueDev,
  cline,
  copilot,
  openaiSdk,
  anthropicSdk,
  googleGenaiSdk,
]
