import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'

/**
 * `burnrate import --help` listed every option of the commands that read spend (withTarget),
 * `--token` and `--local` among them, which import never uses: it always writes the ledger file,
 * and sends no request that a token would go with. Its help lists only what import uses: the
 * folder and config of the ledger, and `--url`, a running Burnrate whose newest calls wait for a
 * later import. `--token` and `--local` are still taken (scripts that pass one set of options to
 * every command keep working) and change nothing.
 */
describe('burnrate import --help', () => {
  it('lists only the options import uses', async () => {
    const r = await runCliCaptured('import', '--help')
    expect(r.code).toBe(0)
    const options = r.out.split('\nOptions:\n')[1].split('\n\n')[0]
    const flags = [...options.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1])
    expect(flags.sort()).toEqual(['--config', '--data-dir', '--help', '--json', '--path', '--tenant', '--url'])
    // --url's line says what it is for here: not a server to read numbers from.
    expect(options).toMatch(/--url <url>[^]*later import/)
  })

  it('still takes --token and --local, and imports as without them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-import-help-'))
    try {
      mkdirSync(join(dir, 'logs'))
      const r = await runCliCaptured('import', 'codex', '--path', join(dir, 'logs'), '--data-dir', join(dir, 'data'), '--local', '--token', 't', '--json')
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).results[0].agent).toBe('codex')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
