import { isUtf8 } from 'node:buffer'
import { existsSync } from 'node:fs'
import { basename, isAbsolute, join } from 'node:path'
import { shellBlockFormat } from '../formats/shell-block'
import { readBytes } from '../files'
import { tildify, xdgConfig } from '../paths'
import type { AgentConnector, AgentFile, ConnectContext } from '../types'

/**
 * The profile bash reads as a login shell (macOS's Terminal starts one): the first of
 * ~/.bash_profile, ~/.bash_login and ~/.profile that exists, and only that one, else
 * ~/.bash_profile. A ~/.bash_profile made beside the user's ~/.profile would hide it from every
 * new terminal (their PATH and the rest gone while connected).
 */
function bashLoginProfile(ctx: ConnectContext): string {
  const files = ['.bash_profile', '.bash_login', '.profile'].map((name) => join(ctx.home, name))
  return files.find((f) => existsSync(f)) ?? files[0]
}

/**
 * The profile of the user's login shell (`$SHELL`): zsh, bash, fish, else ~/.profile. For zsh
 * where ZDOTDIR is not set (the app started from the Dock or a menu), a `.zshrc` the connection's
 * record names (`recorded`): connected from a terminal where ZDOTDIR was, it is the one zsh reads,
 * which ~/.zshrc, derived here, may not be.
 */
export function shellProfile(ctx: ConnectContext, recorded: readonly string[] = []): { path: string; syntax: 'posix' | 'fish' } {
  const shell = basename(ctx.env.SHELL ?? '')
  if (shell === 'zsh') {
    const kept = ctx.env.ZDOTDIR ? undefined : recorded.find((p) => basename(p) === '.zshrc')
    return { path: kept ?? join(ctx.env.ZDOTDIR || ctx.home, '.zshrc'), syntax: 'posix' }
  }
  if (shell === 'bash') return { path: ctx.platform === 'darwin' ? bashLoginProfile(ctx) : join(ctx.home, '.bashrc'), syntax: 'posix' }
  if (shell === 'fish') return { path: join(xdgConfig(ctx), 'fish', 'conf.d', 'burnrate.fish'), syntax: 'fish' }
  return { path: join(ctx.home, '.profile'), syntax: 'posix' }
}

/**
 * Said when zsh is the login shell, ZDOTDIR is not set where Burnrate runs (the app started from
 * the Dock or a menu gets no shell's variables), and ~/.zshenv, which zsh reads first, sets it to
 * another folder: zsh then reads that folder's .zshrc, never the ~/.zshrc Burnrate writes, so the
 * variables are not set in any terminal. Null otherwise.
 */
function zdotdirNote(ctx: ConnectContext, f: AgentFile): string | null {
  // Only ~/.zshrc: a .zshrc elsewhere is one recorded from a terminal where ZDOTDIR was set (shellProfile).
  if (basename(ctx.env.SHELL ?? '') !== 'zsh' || ctx.env.ZDOTDIR || f.path !== join(ctx.home, '.zshrc')) return null
  let zshenv: Buffer | null
  try {
    zshenv = readBytes(join(ctx.home, '.zshenv'))
  } catch {
    return null
  }
  const set = zshenv && /^\s*(?:export\s+)?ZDOTDIR=("[^"\n]*"|'[^'\n]*'|\S*)/m.exec(zshenv.toString('utf8'))
  if (!set) return null
  const value = set[1].replace(/^(["'])(.*)\1$/, '$2')
  if (['~', '$HOME', '${HOME}', ctx.home].includes(value.replace(/\/+$/, ''))) return null
  // Connected from a terminal, as this says to: that .zshrc already sets them, and the terminals read it.
  const dir = value.replace(/^(?:~|\$HOME|\$\{HOME\})(?=\/|$)/, ctx.home)
  if (isAbsolute(dir) && setsAll(join(dir, '.zshrc'), f)) return null
  return (
    `~/.zshenv sets ZDOTDIR (${value}): zsh reads the .zshrc there, not ${tildify(ctx, f.path)}, where Burnrate writes, so the variables are not set in your terminals. ` +
    'Connect from a terminal instead (burnrate connect sdk), where ZDOTDIR is set: Burnrate then writes them into that .zshrc.'
  )
}

/** Whether the zsh file at `path` sets every one of `f`'s settings to its value (Burnrate's block there). */
function setsAll(path: string, f: AgentFile): boolean {
  try {
    const bytes = readBytes(path)
    if (bytes === null || !isUtf8(bytes)) return false
    const doc = shellBlockFormat('posix').open(bytes.toString('utf8'))
    return f.settings.every((s) => doc.get(s.key) === s.value)
  } catch {
    return false
  }
}

/**
 * Scripts on the OpenAI and Anthropic SDKs (and any tool built on them that reads the standard
 * variables): OPENAI_BASE_URL and ANTHROPIC_BASE_URL in a marked block of the shell profile.
 */
export const sdk: AgentConnector = {
  id: 'sdk',
  name: 'SDK scripts (shell profile)',
  recordedAs: ['openai-sdk', 'anthropic-sdk'],
  installed: (ctx) => ctx.platform !== 'win32',
  files(ctx, url, recorded) {
    const { path, syntax } = shellProfile(ctx, recorded)
    return [
      {
        path,
        format: shellBlockFormat(syntax),
        settings: [
          { key: ['OPENAI_BASE_URL'], value: `${url}/v1` },
          { key: ['ANTHROPIC_BASE_URL'], value: url },
        ],
      },
    ]
  },
  // A ZDOTDIR set in ~/.zshenv moves zsh's .zshrc where the app (started without it) does not look.
  bypassNote: zdotdirNote,
  // A profile connected from another login shell: fish's is the only .fish one (shellProfile).
  formatOf: (path) => shellBlockFormat(path.endsWith('.fish') ? 'fish' : 'posix'),
  note: 'Applies to terminals opened from now on; scripts started elsewhere (cron, IDEs) need the variables set there.',
  unsupported: (ctx) => (ctx.platform === 'win32' ? 'On Windows, set OPENAI_BASE_URL and ANTHROPIC_BASE_URL in System Properties → Environment Variables.' : null),
}
