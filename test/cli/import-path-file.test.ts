import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `burnrate import claude-code --path <a session's .jsonl>`: --path takes the folder of the
 * agent's logs, and a log file given instead was answered 'no such folder: <the file>', though the
 * file is there: one went looking for a typo. It now says --path takes a folder, naming the file
 * and its folder (exit 1, as a missing folder). The built CLI, in its own process.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const dir = mkdtempSync(join(tmpdir(), 'burnrate-import-file-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args], { env: { ...process.env, HOME: dir, NO_COLOR: '1' } })
}

describe('burnrate import --path given a log file', () => {
  it('says --path takes a folder, naming the file and its folder', async () => {
    cpSync(resolve(__dirname, '../fixtures/agent-logs/claude-code/projects'), join(dir, 'projects'), { recursive: true })
    const folder = join(dir, 'projects', '-home-dev-shop')
    const file = join(folder, '6f1c2a9e-3b4d-4c1e-9a7f-0d2b8c5e1f40.jsonl')
    const r = await cli(['import', 'claude-code', '--path', file, '--data-dir', join(dir, 'data')])
    expect(r.code).toBe(1)
    expect(r.stderr).not.toContain('no such folder')
    expect(r.stderr).toBe(`burnrate: --path takes the folder of the agent's logs, not a file: ${file}; give its folder (${folder})\n`)
    // Its folder imports.
    const ok = await cli(['import', 'claude-code', '--path', folder, '--data-dir', join(dir, 'data'), '--json'])
    expect(ok.code, ok.stderr).toBe(0)
    expect(JSON.parse(ok.stdout).results[0].imported).toBeGreaterThan(0)
  })
})
