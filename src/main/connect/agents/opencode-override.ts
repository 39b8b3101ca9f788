import { join } from 'node:path'
import { readText } from '../files'
import { jsonFormat } from '../formats/json'
import type { KeyPath } from '../formats/types'
import { tildify } from '../paths'
import type { AgentFile, ConnectContext } from '../types'
import { underBurnrate } from './codex-provider'

const KEY: KeyPath = ['provider', 'anthropic', 'options', 'baseURL']

/** Where opencode's managed config lives (its ConfigManaged.managedConfigDir), read after every other file. */
function managedDir(ctx: ConnectContext): string {
  if (ctx.env.OPENCODE_TEST_MANAGED_CONFIG_DIR) return ctx.env.OPENCODE_TEST_MANAGED_CONFIG_DIR
  if (ctx.platform === 'darwin') return '/Library/Application Support/opencode'
  if (ctx.platform === 'win32') return join(ctx.env.ProgramData || 'C:\\ProgramData', 'opencode')
  return '/etc/opencode'
}

/**
 * The config opencode (1.18) reads after its global one, in its order, each merged over what came
 * before: the file $OPENCODE_CONFIG names, (a project's opencode.json, not known here),
 * ~/.opencode/opencode.json(c), $OPENCODE_CONFIG_DIR/opencode.json(c), $OPENCODE_CONFIG_CONTENT,
 * the managed folder's opencode.json(c). Each as where it is named, and its text (null: none).
 */
function laterLayers(ctx: ConnectContext): { where: string; path?: string; text: () => string | null }[] {
  const file = (path: string, why = '') => ({ where: `${tildify(ctx, path)}${why}`, path, text: () => readText(path) })
  const both = (dir: string, why = '') => ['opencode.json', 'opencode.jsonc'].map((n) => file(join(dir, n), why))
  const e = ctx.env
  return [
    ...(e.OPENCODE_CONFIG ? [file(e.OPENCODE_CONFIG, ' (OPENCODE_CONFIG)')] : []),
    ...both(join(ctx.home, '.opencode')),
    ...(e.OPENCODE_CONFIG_DIR ? both(e.OPENCODE_CONFIG_DIR, ' (OPENCODE_CONFIG_DIR)') : []),
    ...(e.OPENCODE_CONFIG_CONTENT ? [{ where: 'OPENCODE_CONFIG_CONTENT (set here)', text: () => e.OPENCODE_CONFIG_CONTENT ?? null }] : []),
    ...both(managedDir(ctx)),
  ]
}

/**
 * Said when config opencode reads after the global file Burnrate edits (`f`) sets its Anthropic
 * provider's baseURL elsewhere: the last such value wins (opencode merges them deeply), so its
 * calls go there, not through Burnrate, while Burnrate shows it connected. Not when that value is
 * this Burnrate's. A file that cannot be read or parsed is passed over. Null when nothing overrides it.
 */
export function opencodeOverrideNote(ctx: ConnectContext, f: AgentFile, url: string): string | null {
  let last: { where: string; value: unknown } | null = null
  for (const layer of laterLayers(ctx)) {
    // The file Burnrate edits, named again ($OPENCODE_CONFIG_DIR the global folder).
    if (layer.path === f.path) continue
    try {
      const text = layer.text()
      const value = text === null ? undefined : jsonFormat.open(text).get(KEY)
      if (value !== undefined) last = { where: layer.where, value }
    } catch {
      // Not read: opencode would refuse to start on it, which says so itself.
    }
  }
  if (!last) return null
  // opencode substitutes {env:NAME} in its config's text.
  const value = typeof last.value === 'string' ? last.value.replace(/\{env:([^}]+)\}/g, (_, n: string) => ctx.env[n] ?? '') : last.value
  if (underBurnrate(value, url)) return null
  return (
    `${last.where} sets provider.anthropic.options.baseURL to ${JSON.stringify(last.value)}: opencode reads it after ${tildify(ctx, f.path)}, where Burnrate sets it, so it sends its Anthropic calls there and Burnrate does not meter them. ` +
    `To meter them, remove it there, or set it to ${url}/v1.`
  )
}
