import type { LogAgent, LogSource } from '../types'
import { claudeCode } from './claude-code'
import { codex } from './codex'
import { geminiCli } from './gemini-cli'
import { opencode } from './opencode'

/** Every agent whose logs can be imported. Adding one is one file and one line here. */
export const LOG_SOURCES: Record<LogAgent, LogSource> = {
  'claude-code': claudeCode,
  codex,
  'gemini-cli': geminiCli,
  opencode,
}
