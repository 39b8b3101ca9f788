import { execFileSync, spawnSync } from 'node:child_process'
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parse as parseToml } from '@decimalturn/toml-patch'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

/**
 * The files `burnrate connect` (the built CLI) writes into a real home folder: what they look like
 * as text, so that the user, an installer or the agent itself can go on editing them, and that
 * `disconnect` gives back the very bytes that were there.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const URL = 'http://127.0.0.1:8791'

let home: string
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-connect-files-'))
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

function cli(...args: string[]): { code: number | null; out: string; err: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, SHELL: '/bin/bash', BURNRATE_DATA_DIR: join(home, 'data'), BURNRATE_PORT: '8791', BURNRATE_CONFIG: '', BURNRATE_PRICE_AUTO_UPDATE: 'false' }
  for (const k of ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'XDG_CONFIG_HOME', 'GEMINI_CLI_HOME', 'ZDOTDIR', 'BURNRATE_HOST', 'BURNRATE_DATABASE_URL']) delete env[k]
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

function ok(...args: string[]): string {
  const r = cli(...args)
  expect(r.err, `burnrate ${args.join(' ')}`).not.toMatch(/error/i)
  expect(r.code, `burnrate ${args.join(' ')}: ${r.err}`).toBe(0)
  return r.out
}

const read = (...p: string[]) => readFileSync(join(home, ...p), 'utf8')
const mode = (...p: string[]) => statSync(join(home, ...p)).mode & 0o777

describe('the files burnrate connect writes', () => {
  it('a new ~/.codex/config.toml ends with a newline: a line the user appends to it stays a line of its own, and Codex still reads the file', () => {
    ok('connect', 'codex')
    expect(read('.codex', 'config.toml')).toBe(`openai_base_url = "${URL}/v1"\n`)
    expect(mode('.codex', 'config.toml')).toBe(0o600)
    appendFileSync(join(home, '.codex', 'config.toml'), 'model = "o3"\n')
    expect(parseToml(read('.codex', 'config.toml'))).toEqual({ openai_base_url: `${URL}/v1`, model: 'o3' })
    // The user's line stays; Burnrate's goes.
    ok('disconnect', 'codex')
    expect(read('.codex', 'config.toml')).toBe('model = "o3"\n')
  })

  it('a new ~/.claude/settings.json and opencode.json are pretty-printed (2 spaces, a newline at the end), as Claude Code writes its own', () => {
    ok('connect', 'claude-code')
    expect(read('.claude', 'settings.json')).toBe(
      `{\n  "env": {\n    "ANTHROPIC_BASE_URL": "${URL}",\n    "ANTHROPIC_VERTEX_BASE_URL": "${URL}/vertex/v1"\n  }\n}\n`,
    )
    expect(mode('.claude', 'settings.json')).toBe(0o600)
    ok('connect', 'opencode')
    expect(read('.config', 'opencode', 'opencode.json')).toBe(`{\n  "provider": {\n    "anthropic": {\n      "options": {\n        "baseURL": "${URL}/v1"\n      }\n    }\n  }\n}\n`)
    expect(mode('.config', 'opencode', 'opencode.json')).toBe(0o600)
    ok('disconnect', '--all')
    expect(existsSync(join(home, '.claude'))).toBe(false)
    expect(existsSync(join(home, '.config', 'opencode'))).toBe(false)
    // A file holding only `{}` has no layout to keep either; Disconnect gives it back as it was.
    mkdirSync(join(home, '.claude'))
    writeFileSync(join(home, '.claude', 'settings.json'), '{}')
    ok('connect', 'claude-code')
    expect(read('.claude', 'settings.json')).toBe(`{\n  "env": {\n    "ANTHROPIC_BASE_URL": "${URL}",\n    "ANTHROPIC_VERTEX_BASE_URL": "${URL}/vertex/v1"\n  }\n}\n`)
    ok('disconnect', 'claude-code')
    expect(read('.claude', 'settings.json')).toBe('{}')
  })

  it('new Gemini .env and shell profile: one assignment a line, a newline at the end, readable by the user only', () => {
    ok('connect', 'gemini-cli')
    expect(read('.gemini', '.env')).toBe(`GOOGLE_GEMINI_BASE_URL=${URL}\nCODE_ASSIST_ENDPOINT=${URL}/code-assist\nGOOGLE_VERTEX_BASE_URL=${URL}/vertex\n`)
    expect(mode('.gemini', '.env')).toBe(0o600)
    ok('connect', 'sdk')
    expect(read('.bashrc')).toMatch(new RegExp(`^# >>> burnrate >>>\n#[^\n]*\nexport OPENAI_BASE_URL=${URL}/v1\nexport ANTHROPIC_BASE_URL=${URL}\n# <<< burnrate <<<\n$`))
    expect(mode('.bashrc')).toBe(0o600)
    ok('disconnect', '--all')
    expect(existsSync(join(home, '.gemini'))).toBe(false)
    expect(existsSync(join(home, '.bashrc'))).toBe(false)
  })

  // Each agent's file as a user may have it: without a newline at its end, group-readable.
  const MINE: [string, string[], string][] = [
    ['codex', ['.codex', 'config.toml'], 'model = "o3"'],
    ['codex', ['.codex', 'config.toml'], 'model = "o3"\n\n[model_providers.azure]\nname = "Azure"'],
    ['claude-code', ['.claude', 'settings.json'], '{\n  "model": "opus"\n}'],
    ['claude-code', ['.claude', 'settings.json'], '{"model":"opus"}'],
    ['opencode', ['.config', 'opencode', 'opencode.json'], '{\n\t"theme": "dark"\n}'],
    ['gemini-cli', ['.gemini', '.env'], 'GEMINI_API_KEY=AIzaSyD-0123456789abcdefghijklmnopqrstu'],
    ['sdk', ['.bashrc'], "alias ll='ls -l'"],
  ]
  for (const [agent, path, text] of MINE) {
    it(`${agent}: ${path.join('/')} without a newline at its end (${JSON.stringify(text.slice(0, 20))}) gets one when connected; disconnect puts back its bytes and mode`, () => {
      mkdirSync(join(home, ...path.slice(0, -1)), { recursive: true })
      writeFileSync(join(home, ...path), text)
      chmodSync(join(home, ...path), 0o640)
      ok('connect', agent)
      const written = read(...path)
      expect(written.endsWith('\n')).toBe(true)
      expect(written).not.toMatch(/\n\n$/)
      expect(mode(...path)).toBe(0o640)
      // An appended line is a line of its own: the file still parses as it did, with the line.
      if (agent === 'codex') {
        appendFileSync(join(home, ...path), 'approval_policy = "never"\n')
        expect(read(...path)).toMatch(/[^\n]\napproval_policy = "never"\n$/)
        expect(parseToml(read(...path))).toMatchObject({ openai_base_url: `${URL}/v1` })
        writeFileSync(join(home, ...path), written)
      }
      ok('disconnect', agent)
      expect(read(...path)).toBe(text)
      expect(mode(...path)).toBe(0o640)
    })
  }

  // A line the user adds to such a file after Burnrate connected it, as they would (`echo … >>`).
  const ADDED: Record<string, string> = { codex: 'approval_policy = "never"', 'gemini-cli': 'GEMINI_MODEL=gemini-2.5-pro', sdk: 'export EDITOR=vim' }
  for (const [agent, path, text] of MINE.filter(([a]) => ADDED[a])) {
    it(`${agent}: a line added with echo >> to ${path.join('/')} (connected without a newline at its end) keeps its newline through disconnect`, () => {
      mkdirSync(join(home, ...path.slice(0, -1)), { recursive: true })
      writeFileSync(join(home, ...path), text)
      ok('connect', agent)
      appendFileSync(join(home, ...path), `${ADDED[agent]}\n`)
      ok('disconnect', agent)
      // Burnrate's lines gone, the user's kept, and a line added next is a line of its own.
      expect(read(...path)).toBe(`${text}\n${ADDED[agent]}\n`)
    })
  }

  it('a file that ends with a newline keeps exactly one, and disconnect puts back its bytes', () => {
    for (const [agent, path, text] of MINE) {
      mkdirSync(join(home, ...path.slice(0, -1)), { recursive: true })
      writeFileSync(join(home, ...path), `${text}\n`)
      ok('connect', agent)
      expect(read(...path)).toMatch(/[^\n]\n$/)
      ok('disconnect', agent)
      expect(read(...path)).toBe(`${text}\n`)
    }
  })
})
