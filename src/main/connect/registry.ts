import { claudeCode } from './agents/claude-code'
import { codex } from './agents/codex'
import { geminiCli } from './agents/gemini-cli'
import { opencode } from './agents/opencode'
import { sdk } from './agents/sdk'
import type { AgentConnector } from './types'

/** Every agent Burnrate can connect; adding one is one file in ./agents and one line here. */
export const CONNECTORS: readonly AgentConnector[] = [claudeCode, codex, geminiCli, opencode, sdk]

export const CONNECTOR_IDS = CONNECTORS.map((c) => c.id)
