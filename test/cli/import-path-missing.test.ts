import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `burnrate import claude-code --path <folder> <typo>`: a --path folder that is not there was
 * refused only when every one given was missing. With two, one mistyped was left out without a
 * word: the run printed its table and exited 0, the calls of the folder meant never imported,
 * and a report afterwards short of them. Each folder given is now looked at first: any missing
 * one is named (exit 1, as with one), before anything is imported or a ledger made. The built
 * CLI, in its own process.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const dir = mkdtempSync(join(tmpdir(), 'burnrate-import-missing-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args], { env: { ...process.env, HOME: dir, NO_COLOR: '1' } })
}

describe('burnrate import --path with a folder that is not there', () => {
  it('names it and imports nothing, whether or not another folder given is there', async () => {
    cpSync(resolve(__dirname, '../fixtures/agent-logs/claude-code/projects'), join(dir, 'projects'), { recursive: true })
    const good = join(dir, 'projects')
    const typo = join(dir, 'prjects')
    const data = join(dir, 'data')
    for (const paths of [[good, typo], [typo, good], [typo]]) {
      const r = await cli(['import', 'claude-code', '--path', ...paths, '--data-dir', data])
      expect(r.stderr).toBe(`burnrate: no such folder: ${typo}\n`)
      expect(r.code).toBe(1)
      expect(r.stdout).toBe('')
      // Nothing made: no ledger started for a run that was refused.
      expect(existsSync(join(data, 'burnrate.db'))).toBe(false)
    }
    // Both there: imported.
    const ok = await cli(['import', 'claude-code', '--path', good, '--data-dir', data, '--json'])
    expect(ok.code, ok.stderr).toBe(0)
    expect(JSON.parse(ok.stdout).results[0].imported).toBeGreaterThan(0)
  })
})
