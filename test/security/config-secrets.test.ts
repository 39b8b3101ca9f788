import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'

/** A config the server refuses to start with is reported on stderr (and the desktop app's log file): never with a raw key from it. */
const KEY = 'sk-proj-WHOLEKEYSECRET-0123456789abcdef'
const dir = mkdtempSync(join(tmpdir(), 'burnrate-config-secrets-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('config errors and secrets', () => {
  it('two rules on the same whole key are refused naming the key by its hint, not the key', async () => {
    const file = join(dir, 'config.yaml')
    writeFileSync(
      file,
      `budgets:\n  rules:\n    - { api_key_pattern: "${KEY}", daily_limit_usd: 5, action: warn }\n    - { api_key_pattern: "${KEY}", monthly_limit_usd: 50, action: block }\n`,
    )
    const r = await runCliCaptured('serve', '--config', file, '--data-dir', join(dir, 'data'), '--port', '0')
    expect(r.code).toBe(1)
    expect(r.out).toContain('budgets.rules[1].api_key_pattern')
    expect(r.out).toContain('sk-…cdef')
    expect(r.out).not.toContain('WHOLEKEYSECRET')
  })
})
