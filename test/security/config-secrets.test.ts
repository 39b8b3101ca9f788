import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
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

  const TOKEN = 'Xy9-DASHBOARDtokenSECRET-0123456789'
  it.each([
    ['|', 'line 2, column 11'],
    ['>', 'line 2, column 11'],
    ['*', 'must be in quotes'],
  ])('a token written without quotes that starts with %j is refused without printing it', async (first, says) => {
    const file = join(dir, `config-${first.charCodeAt(0)}.yaml`)
    writeFileSync(file, `dashboard:\n  token: ${first}${TOKEN}\n`)
    const r = await runCliCaptured('serve', '--config', file, '--data-dir', join(dir, 'data'), '--port', '0')
    expect(r.code).toBe(1)
    expect(r.out).toContain('YAML')
    expect(r.out).toContain(says)
    expect(r.out).not.toContain('DASHBOARDtokenSECRET')
  })

  it('a dashboard.token written without quotes that starts with "!" (a YAML tag) stops start-up, rather than leave the dashboard open', () => {
    const file = join(dir, 'config-tag.yaml')
    writeFileSync(file, `dashboard:\n  token: !${TOKEN}\n`)
    let message: string
    try {
      const config = loadConfig({ config: file, dataDir: join(dir, 'data') }, {})
      message = `loaded, with dashboard.token ${JSON.stringify(config.dashboard.token)}`
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toContain('not valid YAML (line 2, column 10)')
    expect(message).toContain('must be in quotes')
    expect(message).not.toContain('DASHBOARDtokenSECRET')
  })

  it.each([
    ['dashboard: {token:X}', `dashboard: {token:${TOKEN}}\n`, 'dashboard: unknown key "token:…"'],
    ['dashboard: {token=X}', `dashboard: {token=${TOKEN}}\n`, 'dashboard: unknown key "token=…"'],
    ['a token written as a key', `admin:\n  enabled: true\n  ${TOKEN}${TOKEN}:\n`, 'admin: unknown key "Xy9-DASHBOAR…"'],
    ['providers: {openai:X}', `providers: {openai:${TOKEN}}\n`, 'providers.openai:…: expected object'],
  ])('a key that holds a token (%s) is named without it', (_what, text, says) => {
    const file = join(dir, 'config-key.yaml')
    writeFileSync(file, text)
    let message: string
    try {
      loadConfig({ config: file, dataDir: join(dir, 'data') }, {})
      message = 'loaded'
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toContain(says)
    expect(message).not.toContain('DASHBOARDtokenSECRET')
  })
})
