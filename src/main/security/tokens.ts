import { ConfigError } from '../config/load'
import type { Config } from '../config/schema'

/** Shortest admin or dashboard token accepted. */
export const MIN_TOKEN_LENGTH = 16
/** Fewest distinct characters in a token (`aaaaaaaaaaaaaaaa` is not a secret). */
const MIN_DISTINCT = 6

const HOW = 'make one with `openssl rand -hex 24` (or `node -e "console.log(crypto.randomBytes(24).toString(\'hex\'))"`)'

/** Why a token is too weak to guard the admin API or the dashboard, or null when it is strong enough. */
export function tokenProblem(token: string): string | null {
  if (/\s/.test(token)) return 'must not contain spaces or other whitespace'
  if (token.length < MIN_TOKEN_LENGTH) return `is ${token.length} characters; use at least ${MIN_TOKEN_LENGTH}`
  if (new Set(token).size < MIN_DISTINCT) return 'is too easy to guess (too few different characters)'
  return null
}

/**
 * Refuses to start with a weak `admin.token` or `dashboard.token`: the right token always works
 * (a flood of wrong ones never locks it out), so its length is what stops guessing.
 */
export function checkTokens(config: Pick<Config, 'admin' | 'dashboard' | 'source'>): void {
  const where = `config ${config.source ?? '(defaults)'}`
  const check = (key: string, token: string | undefined, needed: boolean) => {
    if (token === undefined || (token === '' && !needed)) return
    const problem = token.trim() === '' ? 'is empty' : tokenProblem(token)
    if (problem) throw new ConfigError(`${where}: ${key}: the token ${problem}; ${HOW}`)
  }
  if (config.admin.enabled) check('admin.token', config.admin.token, true)
  check('dashboard.token', config.dashboard.token, false)
}
