import { join } from 'node:path'
import { jsonFormat } from '../formats/json'
import { anyExists, onPath } from '../paths'
import type { AgentConnector, ConnectContext } from '../types'
import { claudeProviderNote } from './claude-provider'

function configDir(ctx: ConnectContext): string {
  return ctx.env.CLAUDE_CONFIG_DIR || join(ctx.home, '.claude')
}

/**
 * Claude Code: `env.ANTHROPIC_BASE_URL` in its user settings (`~/.claude/settings.json`, or
 * `$CLAUDE_CONFIG_DIR`), and `env.ANTHROPIC_VERTEX_BASE_URL`, which it reads only on Vertex AI
 * (`CLAUDE_CODE_USE_VERTEX`). Bedrock's address names the region, which Burnrate cannot know: its
 * line is in the Connect panel. So is Microsoft Foundry's (`ANTHROPIC_FOUNDRY_BASE_URL`): it works
 * only once `providers.foundry.base_url` names the resource, and Anthropic's Foundry SDK refuses a
 * base URL beside a resource (`ANTHROPIC_FOUNDRY_RESOURCE`), so writing it could break a Foundry
 * setup that works.
 */
export const claudeCode: AgentConnector = {
  id: 'claude-code',
  name: 'Claude Code',
  recordedAs: ['claude-code'],
  installed: (ctx) => anyExists(configDir(ctx)) || onPath(ctx, 'claude'),
  files: (ctx, url) => [
    {
      path: join(configDir(ctx), 'settings.json'),
      format: jsonFormat,
      env: ['env'],
      settings: [
        { key: ['env', 'ANTHROPIC_BASE_URL'], value: url },
        { key: ['env', 'ANTHROPIC_VERTEX_BASE_URL'], value: `${url}/vertex/v1` },
      ],
    },
  ],
  // On Amazon Bedrock or Microsoft Foundry it reads neither address: connected all the same, and
  // said (./claude-provider.ts).
  bypassNote: claudeProviderNote,
  note: 'Applies to Claude Code sessions started from now on.',
}
