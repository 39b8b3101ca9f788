import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir, userInfo } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { defaultDataDir } from '../../src/main/config/paths'
import { writeClaudeCodeCall } from './agent-logs'
import { runCliCaptured } from './cli'
import { eventually, postJson } from './http'
import { OWN_ENV } from './own-env'
import { type TestServer, startTestServer } from './server'

/**
 * Tests never read or edit the developer's own files: the suite's processes run with an empty
 * home of their own (test/support/home.ts), and each test server connects and watches the
 * agents of a home of its own (test/support/server.ts), even when the environment it is started
 * in names the developer's folders.
 */

const TOKEN = 'admin-token-for-test-home-0123456789'
const saved = { ...process.env }
const made: string[] = []
const servers: TestServer[] = []
afterEach(async () => {
  for (const t of servers.splice(0)) await t.cleanup()
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
  Object.assign(process.env, saved)
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** Every file under `dir` with its contents: what a test must leave as it found it. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const p = join(e.parentPath, e.name)
    out[relative(dir, p)] = e.isFile() ? readFileSync(p, 'utf8') : statSync(p).isDirectory() ? '<dir>' : '<other>'
  }
  return out
}

/**
 * A folder laid out as a developer's home with every agent installed and its own logs, and this
 * process's environment pointing at it as a developer's shell would (HOME, CLAUDE_CONFIG_DIR, …).
 */
function developerHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'burnrate-sentinel-home-'))
  made.push(home)
  mkdirSync(join(home, '.claude'))
  writeFileSync(join(home, '.claude', 'settings.json'), '{ "model": "opus" }\n')
  mkdirSync(join(home, '.codex'))
  writeFileSync(join(home, '.codex', 'config.toml'), 'model = "gpt-5"\n')
  mkdirSync(join(home, '.gemini'))
  writeFileSync(join(home, '.gemini', '.env'), 'GEMINI_MODEL=pro\n')
  mkdirSync(join(home, '.config', 'opencode'), { recursive: true })
  writeFileSync(join(home, '.config', 'opencode', 'opencode.json'), '{}\n')
  writeFileSync(join(home, '.bashrc'), '# mine\n')
  writeClaudeCodeCall(join(home, '.claude', 'projects'), 'sentinel-session', 'claude-sonnet-4-5')
  Object.assign(process.env, {
    HOME: home,
    USERPROFILE: home,
    SHELL: '/bin/bash',
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    CODEX_HOME: join(home, '.codex'),
    GEMINI_CLI_HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
  })
  return home
}

describe("the suite's processes", () => {
  it("run with an empty temp home of their own, not the user's, and without the variables that name the user's folders", () => {
    expect(homedir()).not.toBe(userInfo().homedir)
    expect(resolve(homedir()).startsWith(resolve(tmpdir()))).toBe(true)
    expect(process.env.USERPROFILE).toBe(homedir())
    for (const k of OWN_ENV) expect(process.env[k], k).toBeUndefined()
    // A child started with this environment (the built CLI, the headless server) has it too.
    const child = execFileSync(process.execPath, ['-e', 'process.stdout.write(require("node:os").homedir())'], { env: process.env, encoding: 'utf8' })
    expect(child).toBe(homedir())
  })

  it('run `burnrate connect` (in this process, as the CLI tests do) on the agents of that home', async () => {
    const r = await runCliCaptured('connect', 'claude-code')
    expect(r.code, r.out).toBe(0)
    expect(JSON.parse(readFileSync(join(homedir(), '.claude', 'settings.json'), 'utf8')).env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    // Its records are in the data folder under that home too.
    expect(defaultDataDir().startsWith(homedir())).toBe(true)
    expect(statSync(defaultDataDir()).isDirectory()).toBe(true)
  })
})

describe('a test server', () => {
  it("connects every agent in a home of its own, never in the home this process's environment names", async () => {
    const sentinel = developerHome()
    const before = snapshot(sentinel)
    const t = await startTestServer({ admin: { enabled: true, token: TOKEN } })
    servers.push(t)
    expect(t.home).not.toBe(sentinel)
    for (const agent of ['claude-code', 'codex', 'gemini-cli', 'opencode', 'sdk']) {
      const res = await postJson(`${t.url}/api/admin/agents/${agent}/connect`, {}, { authorization: `Bearer ${TOKEN}` })
      expect(res.status, `${agent}: ${res.body}`).toBe(200)
    }
    expect(snapshot(sentinel)).toEqual(before)
    expect(JSON.parse(readFileSync(join(t.home, '.claude', 'settings.json'), 'utf8')).env.ANTHROPIC_BASE_URL).toBe(t.url)
    expect(readFileSync(join(t.home, '.codex', 'config.toml'), 'utf8')).toContain(t.url)
  })

  it('has it in its data folder: the same across a restart, removed with it', async () => {
    let t = await startTestServer()
    const home = t.home
    mkdirSync(join(home, '.claude'), { recursive: true })
    t = await t.restart()
    servers.push(t)
    expect(t.home).toBe(home)
    await t.cleanup()
    expect(() => statSync(home)).toThrow()
  })

  it("watches the logs of the agents' home it is given, not those of the home this process's environment names", async () => {
    const sentinel = developerHome()
    const own = mkdtempSync(join(tmpdir(), 'burnrate-own-home-'))
    made.push(own)
    cpSync(resolve(__dirname, '../fixtures/agent-logs/codex'), join(own, '.codex'), { recursive: true })
    const t = await startTestServer({ import: { watch: true } }, undefined, undefined, { create: { agentHome: { home: own, env: {}, platform: 'linux' } } })
    servers.push(t)
    const imported = () => t.server.db.prepare("SELECT agent, count(*) AS n FROM calls WHERE source = 'import' GROUP BY agent ORDER BY agent").all()
    // The first pass reads Claude Code's folders before Codex's: once Codex's calls are in, Claude Code's were looked for.
    await eventually(() => imported().length > 0, 30_000)
    expect(imported()).toEqual([{ agent: 'codex', n: 2 }])
    expect(snapshot(sentinel)).toMatchObject({ '.claude/settings.json': '{ "model": "opus" }\n' })
  })
})
