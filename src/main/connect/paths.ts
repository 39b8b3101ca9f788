import { accessSync, constants, existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { ConnectContext } from './types'

/** `$XDG_CONFIG_HOME` or `~/.config` (where opencode and fish keep their config on every platform). */
export function xdgConfig(ctx: ConnectContext): string {
  return ctx.env.XDG_CONFIG_HOME || join(ctx.home, '.config')
}

/** Whether `command` is an executable on the context's PATH. */
export function onPath(ctx: ConnectContext, command: string): boolean {
  const dirs = (ctx.env.PATH ?? ctx.env.Path ?? '').split(ctx.platform === 'win32' ? ';' : delimiter).filter(Boolean)
  const exts = ctx.platform === 'win32' ? (ctx.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : ['']
  for (const dir of dirs) {
    for (const ext of exts) {
      try {
        accessSync(join(dir, command + ext), constants.X_OK)
        return true
      } catch {}
    }
  }
  return false
}

export function anyExists(...paths: string[]): boolean {
  return paths.some((p) => existsSync(p))
}

/** `/home/me/.claude/settings.json` as `~/.claude/settings.json`. */
export function tildify(ctx: ConnectContext, path: string): string {
  return path === ctx.home || path.startsWith(ctx.home + '/') || path.startsWith(ctx.home + '\\') ? '~' + path.slice(ctx.home.length) : path
}
