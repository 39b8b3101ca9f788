import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'

/**
 * `burnrate connect <agent> --url <url>`: the address the agent is pointed at. A path in it
 * (`http://127.0.0.1:8787/path`, an address copied from the dashboard's page) was written into
 * the agent's config as its base, where Burnrate serves nothing, and the agent's every call then
 * failed; an address without a scheme or of another scheme was refused, but in a message that did
 * not name --url. Each is bad usage, exit 2, one message naming --url and what it takes (with the
 * address meant, as the other commands' --url: src/main/cli/target.ts), nothing written. The home
 * folder is this test process's own (test/support/home.ts).
 */
const data = mkdtempSync(join(tmpdir(), 'burnrate-connect-url-'))
afterAll(() => rmSync(data, { recursive: true, force: true }))

function connect(...args: string[]): ReturnType<typeof runCliCaptured> {
  return runCliCaptured('connect', ...args, '--data-dir', data)
}

describe('burnrate connect --url', () => {
  it.each([
    ['http://127.0.0.1:8787/path', 'http://127.0.0.1:8787'],
    ['http://127.0.0.1:8787/v1', 'http://127.0.0.1:8787'],
    ['127.0.0.1:8787', 'http://127.0.0.1:8787'],
    ['ftp://127.0.0.1:8787', null],
    ['http://127.0.0.1:8787?x=1', null],
    ['', null],
  ])('%j is bad usage, naming --url, and writes nothing', async (url, meant) => {
    for (const args of [['claude-code'], ['claude-code', '--dry-run'], []]) {
      const r = await connect(...args, '--url', url)
      expect(r.code, r.out).toBe(2)
      expect(r.out).toContain('--url')
      expect(r.out).toMatch(/http:\/\/ or https:\/\/ address/)
      if (meant) expect(r.out).toContain(meant)
      expect(r.out).not.toContain('claude-code:')
      expect(existsSync(join(homedir(), '.claude', 'settings.json'))).toBe(false)
    }
  })

  it('an address with a trailing slash, or https, is taken', async () => {
    const slash = await connect('claude-code', '--dry-run', '--url', 'http://127.0.0.1:8787/')
    expect(slash.code, slash.out).toBe(0)
    expect(slash.out).toContain('claude-code: would be connected to http://127.0.0.1:8787 (dry run')
    const https = await connect('claude-code', '--dry-run', '--url', 'https://burnrate.example.com')
    expect(https.code, https.out).toBe(0)
    expect(https.out).toContain('"ANTHROPIC_BASE_URL": "https://burnrate.example.com"')
  })
})
