import { existsSync } from 'node:fs'
import { basename, join } from 'node:path'
import { shellBlockFormat } from '../formats/shell-block'
import { xdgConfig } from '../paths'
import type { AgentConnector, ConnectContext } from '../types'

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

/** The profile of the user's login shell (`$SHELL`): zsh, bash, fish, else ~/.profile. */
export function shellProfile(ctx: ConnectContext): { path: string; syntax: 'posix' | 'fish' } {
  const shell = basename(ctx.env.SHELL ?? '')
  if (shell === 'zsh') return { path: join(ctx.env.ZDOTDIR || ctx.home, '.zshrc'), syntax: 'posix' }
  if (shell === 'bash') return { path: ctx.platform === 'darwin' ? bashLoginProfile(ctx) : join(ctx.home, '.bashrc'), syntax: 'posix' }
  if (shell === 'fish') return { path: join(xdgConfig(ctx), 'fish', 'conf.d', 'burnrate.fish'), syntax: 'fish' }
  return { path: join(ctx.home, '.profile'), syntax: 'posix' }
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
  files(ctx, url) {
    const { path, syntax } = shellProfile(ctx)
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
  // A profile connected from another login shell: fish's is the only .fish one (shellProfile).
  formatOf: (path) => shellBlockFormat(path.endsWith('.fish') ? 'fish' : 'posix'),
  note: 'Applies to terminals opened from now on; scripts started elsewhere (cron, IDEs) need the variables set there.',
  unsupported: (ctx) => (ctx.platform === 'win32' ? 'On Windows, set OPENAI_BASE_URL and ANTHROPIC_BASE_URL in System Properties → Environment Variables.' : null),
}
