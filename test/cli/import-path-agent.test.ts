import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `burnrate import --path <dir> codex`: `--path` takes every word after it as a folder, so the
 * agent named last was read as one. The run was refused with "missing required argument 'agent'"
 * (or, with an agent before --path, "no such folder: codex"), which does not say that the words'
 * order was the trouble. An agent's name given to --path (and no folder of that name here) is now
 * refused as bad usage (exit 2) saying so and giving the form that works. A folder of that name
 * is still a folder. The built CLI, in its own process.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const dir = mkdtempSync(join(tmpdir(), 'burnrate-import-path-agent-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[], cwd = dir): ReturnType<typeof execCli> {
  return execCli(CLI, args, { cwd, env: { ...process.env, HOME: dir, NO_COLOR: '1' } })
}

describe('burnrate import with an agent named after --path', () => {
  const logs = join(dir, 'logs')
  const data = join(dir, 'data')
  mkdirSync(logs)

  it('says the agent goes before --path, exit 2, for an agent missing or one given already', async () => {
    for (const [args, agent] of [
      [['import', '--path', logs, 'codex'], 'codex'],
      [['import', '--path', logs, 'all'], 'all'],
      [['import', 'claude-code', '--path', logs, 'gemini-cli'], 'gemini-cli'],
    ] as const) {
      const r = await cli([...args, '--data-dir', data])
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr, args.join(' ')).toContain(`'${agent}' is invalid`)
      expect(r.stderr, args.join(' ')).toContain(`${agent} is an agent, not a folder: --path takes every word after it; name the agent before it: burnrate import ${agent} --path <dir>`)
      expect(r.stdout).toBe('')
      // Nothing made for a run that was refused.
      expect(existsSync(join(data, 'burnrate.db'))).toBe(false)
    }
  })

  it('takes a folder of that name as a folder', async () => {
    const here = join(dir, 'here')
    mkdirSync(join(here, 'codex'), { recursive: true })
    const r = await cli(['import', 'codex', '--path', logs, 'codex', '--data-dir', data, '--json'], here)
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).results[0].agent).toBe('codex')
  })
})
