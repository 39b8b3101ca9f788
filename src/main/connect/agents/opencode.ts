import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { jsonFormat } from '../formats/json'
import { anyExists, onPath, xdgConfig } from '../paths'
import type { AgentConnector, ConnectContext } from '../types'
import { opencodeOverrideNote } from './opencode-override'

/** opencode's global config: the first of opencode.jsonc, opencode.json, config.json that exists, else opencode.json. */
function configFile(ctx: ConnectContext): string {
  const dir = join(xdgConfig(ctx), 'opencode')
  for (const name of ['opencode.jsonc', 'opencode.json', 'config.json']) {
    if (existsSync(join(dir, name))) return join(dir, name)
  }
  return join(dir, 'opencode.json')
}

/**
 * opencode: `provider.anthropic.options.baseURL` = `<Burnrate>/v1` in its global config, the
 * setting the real-agents suite runs (its OpenAI provider is not covered there, so it is left alone).
 */
export const opencode: AgentConnector = {
  id: 'opencode',
  name: 'opencode',
  recordedAs: ['opencode'],
  installed: (ctx) => anyExists(join(xdgConfig(ctx), 'opencode'), join(ctx.home, '.opencode')) || onPath(ctx, 'opencode'),
  files: (ctx, url) => [
    {
      path: configFile(ctx),
      format: jsonFormat,
      settings: [{ key: ['provider', 'anthropic', 'options', 'baseURL'], value: `${url}/v1` }],
    },
  ],
  // Config opencode reads after that file ($OPENCODE_CONFIG, ~/.opencode, …) setting another
  // baseURL wins over it: connected all the same, and said (./opencode-override.ts).
  bypassNote: (ctx, f, _doc, url) => opencodeOverrideNote(ctx, f, url),
  note: 'Applies to opencode sessions started from now on, for its Anthropic provider (a project opencode.json can override it).',
}
