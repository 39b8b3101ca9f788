import { createHash, timingSafeEqual } from 'node:crypto'
import { ConfigError } from '../config/load'
import type { Config } from '../config/schema'
import { tokenProblem } from '../security/tokens'

export function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest()
}

/**
 * The members allowed to send calls to `POST /api/ingest`, each by the SHA-256 of its token:
 * the raw tokens are hashed at start-up and never kept, logged or stored. A presented token is
 * hashed and compared with every member's digest in constant time (no early exit), so neither
 * which member matched nor how much of a token was right shows in the time an answer takes.
 */
export class TeamMembers {
  private readonly digests: { name: string; digest: Buffer }[]

  constructor(config: Pick<Config, 'team' | 'source'>) {
    const where = `config ${config.source ?? '(defaults)'}`
    const names = new Set<string>()
    const seen = new Set<string>()
    this.digests = config.team.members.map((m, i) => {
      const key = `team.members[${i}]`
      if (names.has(m.name)) {
        throw new ConfigError(`${where}: ${key}.name: ${JSON.stringify(m.name)} is listed twice; give each reporting Burnrate its own name and token`)
      }
      names.add(m.name)
      if ((m.token === undefined) === (m.token_sha256 === undefined)) {
        throw new ConfigError(`${where}: ${key}: give exactly one of token and token_sha256`)
      }
      if (m.token !== undefined) {
        const problem = tokenProblem(m.token)
        if (problem) throw new ConfigError(`${where}: ${key}.token: the token ${problem}; make one with \`openssl rand -hex 24\``)
      }
      const digest = m.token !== undefined ? sha256(m.token) : Buffer.from(m.token_sha256!, 'hex')
      const hex = digest.toString('hex')
      if (seen.has(hex)) throw new ConfigError(`${where}: ${key}: the same token is given to two members; give each its own`)
      seen.add(hex)
      return { name: m.name, digest }
    })
  }

  get size(): number {
    return this.digests.length
  }

  /** The member whose token this is, or null. */
  memberOf(token: string): string | null {
    const given = sha256(token)
    let found: string | null = null
    for (const m of this.digests) {
      if (timingSafeEqual(given, m.digest) && found === null) found = m.name
    }
    return found
  }
}
