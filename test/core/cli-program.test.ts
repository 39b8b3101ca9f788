import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})

/** The built `burnrate` bin, as a script would run it (no TTY). */
export function burnrate(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: '', ...env }, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('the burnrate command line', () => {
  it('is a bin with a Node shebang', () => {
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).bin.burnrate).toBe('out/main/cli.js')
    expect(execFileSync('head', ['-1', CLI], { encoding: 'utf8' }).trim()).toBe('#!/usr/bin/env node')
  })

  it('--help lists the commands and the exit codes, exits 0, and fits 80 columns', () => {
    const r = burnrate(['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('serve')
    expect(r.stdout).toContain('Exit codes')
    for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
  })

  it('each command has --help (exit 0)', () => {
    const r = burnrate(['serve', '--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('--data-dir')
  })

  it('an unknown command or option is a usage error: exit 2 with one message on stderr', () => {
    const a = burnrate(['bogus'])
    expect(a.code).toBe(2)
    expect(a.stderr).toContain("unknown command 'bogus'")
    expect(a.stdout).toBe('')
    const b = burnrate(['serve', '--nope'])
    expect(b.code).toBe(2)
  })

  it('serving loads neither the command-line program nor the import code (only static imports of the serve path)', () => {
    const cli = readFileSync(CLI, 'utf8')
    const headless = /import\("(\.\/chunks\/headless-[^"]+)"\)/.exec(cli)![1]
    const seen = new Set<string>()
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import) "(\.\/[^"]+\.js)"/g)) visit(join(dirname(file), m[1]))
    }
    visit(join(dirname(CLI), headless))
    const code = [...seen].map((f) => readFileSync(f, 'utf8')).join('\n')
    expect(code).not.toContain('"commander"')
    expect(code).not.toContain('cli-table3')
    expect(code).not.toContain('importLogs')
  })
})
