import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../config/load'
import { silentLogger } from '../log'
import { createBurnrate } from '../server/server'
import { tokenProblem } from './tokens'

function startWith(yaml: string): Error | null {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-tok-'))
  try {
    const file = join(dir, 'config.yaml')
    writeFileSync(file, yaml)
    const server = createBurnrate(loadConfig({ config: file, dataDir: dir }, {}), { log: silentLogger })
    server.db.close()
    return null
  } catch (err) {
    return err as Error
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('token strength', () => {
  it('needs 16+ characters, no whitespace, some variety', () => {
    expect(tokenProblem('short-token')).toMatch(/at least 16/)
    expect(tokenProblem('a token with spaces in it')).toMatch(/whitespace/)
    expect(tokenProblem('aaaaaaaaaaaaaaaaaaaa')).toMatch(/too easy/)
    expect(tokenProblem('4f9c2d7e1b8a6053')).toBeNull()
  })

  it('a weak admin or dashboard token stops start-up with one line naming the key and saying how to make one', () => {
    for (const [yaml, key] of [
      ['admin:\n  enabled: true\n  token: hunter2\n', 'admin.token'],
      ['dashboard:\n  token: "1234"\n', 'dashboard.token'],
      ['dashboard:\n  token: "correct horse battery staple"\n', 'dashboard.token'],
    ] as const) {
      const err = startWith(yaml)
      expect(err, yaml).toBeInstanceOf(ConfigError)
      expect(err!.message).toContain(key)
      expect(err!.message).toContain('openssl rand -hex 24')
      expect(err!.message.split('\n')).toHaveLength(1)
    }
    expect(startWith('admin:\n  enabled: true\n  token: 4f9c2d7e1b8a60534f9c\n')).toBeNull()
  })
})
