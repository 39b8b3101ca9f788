import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'

const CODEX = '# mine\nmodel = "o3"  # keep\n\n[model_providers.azure]\nname = "Azure"\nbase_url = "https://me.openai.azure.com/openai"\n'
const CLAUDE = '{\n  "model": "opus"\n}\n'

let home: string
let saved: NodeJS.ProcessEnv
let out: string
let err: string

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-cli-home-'))
  saved = { ...process.env }
  // The command edits the agents of the user it runs as: here, a temporary home.
  process.env.HOME = home
  process.env.BURNRATE_DATA_DIR = join(home, 'data')
  process.env.BURNRATE_PORT = '8791'
  delete process.env.CODEX_HOME
  delete process.env.CLAUDE_CONFIG_DIR
  delete process.env.XDG_CONFIG_HOME
  mkdirSync(join(home, '.codex'))
  writeFileSync(join(home, '.codex', 'config.toml'), CODEX)
  mkdirSync(join(home, '.claude'))
  writeFileSync(join(home, '.claude', 'settings.json'), CLAUDE)
})
afterEach(() => {
  // Restored key by key: replacing process.env with a plain object would cut it off from the real environment (os.homedir() reads that).
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
  Object.assign(process.env, saved)
  rmSync(home, { recursive: true, force: true })
})

async function cli(...args: string[]): Promise<number> {
  out = ''
  err = ''
  const stdout = process.stdout.write
  const stderr = process.stderr.write
  process.stdout.write = ((s: string) => ((out += s), true)) as typeof process.stdout.write
  process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write
  try {
    return await runCli(args)
  } finally {
    process.stdout.write = stdout
    process.stderr.write = stderr
  }
}

describe('burnrate connect / disconnect', () => {
  it('lists the agents, shows the diff it writes, and disconnect --all restores every file', async () => {
    expect(await cli('connect')).toBe(0)
    expect(out).toMatch(/^codex\s+installed, not connected$/m)

    expect(await cli('connect', 'codex', '--dry-run')).toBe(0)
    expect(out).toContain('+openai_base_url = "http://127.0.0.1:8791/v1"')
    expect(out).toContain('dry run: nothing written')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)

    expect(await cli('connect', 'codex')).toBe(0)
    expect(out).toContain('codex: connected to http://127.0.0.1:8791')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toContain('openai_base_url = "http://127.0.0.1:8791/v1"')
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(out).toContain('nothing to change (already connected')

    expect(await cli('disconnect', '--all')).toBe(0)
    expect(out).toContain('codex: disconnected')
    expect(out).toContain('claude-code: disconnected')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
  })

  it('behind a proxy (HTTPS_PROXY here, NO_PROXY without 127.0.0.1): the list and the connect say what to add to NO_PROXY', async () => {
    for (const k of ['HTTP_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'no_proxy']) delete process.env[k]
    process.env.HTTPS_PROXY = 'http://proxy.corp.example:3128'
    process.env.NO_PROXY = '.corp.example'
    const hint = 'export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost" no_proxy="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"'
    expect(await cli('connect')).toBe(0)
    expect(out).toContain('note: HTTPS_PROXY is set here and NO_PROXY does not list 127.0.0.1: calls from your agents for http://127.0.0.1:8791 would go to that proxy')
    expect(out).toContain(hint)
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(out).toMatch(/^note: HTTPS_PROXY is set here .* calls from Claude Code for http:\/\/127\.0\.0\.1:8791 would go to that proxy/m)
    expect(out).toContain(hint)
    process.env.NO_PROXY = '.corp.example,127.0.0.1,localhost'
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(out).not.toContain('note:')
  })

  it("a proxy in the agent's own settings (Claude Code's env block) without NO_PROXY for Burnrate gets the same note", async () => {
    for (const k of ['HTTPS_PROXY', 'HTTP_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY', 'no_proxy']) delete process.env[k]
    writeFileSync(join(home, '.claude', 'settings.json'), '{\n  "env": {\n    "HTTPS_PROXY": "http://proxy.corp:3128"\n  }\n}\n')
    expect(await cli('connect', 'claude-code', '--dry-run')).toBe(0)
    expect(out).toContain('note: HTTPS_PROXY is set for Claude Code (env in ~/.claude/settings.json) and NO_PROXY there does not list 127.0.0.1')
    expect(out).toContain('Add NO_PROXY=127.0.0.1,localhost beside it.')
    writeFileSync(join(home, '.claude', 'settings.json'), '{\n  "env": {\n    "HTTPS_PROXY": "http://proxy.corp:3128",\n    "NO_PROXY": "127.0.0.1,localhost"\n  }\n}\n')
    expect(await cli('connect', 'claude-code', '--dry-run')).toBe(0)
    expect(out).not.toContain('note:')
    // Gemini CLI's env file.
    mkdirSync(join(home, '.gemini'), { recursive: true })
    writeFileSync(join(home, '.gemini', '.env'), 'GEMINI_API_KEY=x\nexport https_proxy=http://proxy.corp:3128\n')
    expect(await cli('connect', 'gemini-cli', '--dry-run')).toBe(0)
    expect(out).toContain('note: https_proxy is set for Gemini CLI (~/.gemini/.env) and NO_PROXY there does not list 127.0.0.1')
  })

  it("Codex on a model provider of its own (model_provider = \"azure\"): connected all the same, and the connect and the list say its calls go around Burnrate", async () => {
    const mine = `model_provider = "azure"\n${CODEX}`
    writeFileSync(join(home, '.codex', 'config.toml'), mine)
    const says = 'chooses the model provider "azure" (model_provider = "azure"): openai_base_url, which Burnrate sets, applies only to Codex\'s built-in OpenAI provider'
    expect(await cli('connect', 'codex')).toBe(0)
    expect(out).toContain(`note: ~/.codex/config.toml ${says}`)
    expect(out).toContain('codex: connected to http://127.0.0.1:8791')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toContain('openai_base_url = "http://127.0.0.1:8791/v1"')
    expect(await cli('connect')).toBe(0)
    expect(out).toMatch(/^codex\s+connected to http:\/\/127\.0\.0\.1:8791$/m)
    expect(out).toMatch(new RegExp(`^\\s+warning: ~/\\.codex/config\\.toml chooses the model provider "azure"`, 'm'))
    expect(out).not.toMatch(/^claude-code.*\n\s+warning/m)
    expect(await cli('disconnect', 'codex')).toBe(0)
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(mine)
  })

  it('exits 1 with the reason for a read-only file, 2 for an unknown agent or no agent', async () => {
    chmodSync(join(home, '.codex', 'config.toml'), 0o444)
    expect(await cli('connect', 'codex')).toBe(1)
    expect(err).toContain('~/.codex/config.toml is read-only; Burnrate wrote nothing')
    expect(await cli('connect', 'vim')).toBe(2)
    expect(err).toContain('Unknown agent "vim"')
    expect(await cli('disconnect')).toBe(2)
  })

  it('a mistake in config.yaml refuses connect, but disconnect still restores the agents (they point at a server that cannot start)', async () => {
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(await cli('connect', 'codex')).toBe(0)
    writeFileSync(join(home, 'data', 'config.yaml'), 'budgets:\n  rules:\n    - {api_key_pattern: "sk-*", daily_limit: 5, action: block}\n')
    expect(await cli('connect', 'codex')).toBe(1)
    expect(err).toContain('unknown key "daily_limit"')
    expect(await cli('disconnect', 'claude-code')).toBe(0)
    expect(err).toContain('unknown key "daily_limit"')
    expect(err).toContain(`disconnecting all the same, with the records in ${join(home, 'data')}`)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
    expect(await cli('disconnect', '--all')).toBe(0)
    expect(out).toContain('codex: disconnected')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)
  })

  it("finds the records where the config's data_dir says, even in a config that does not load", async () => {
    delete process.env.BURNRATE_DATA_DIR
    process.env.XDG_CONFIG_HOME = join(home, 'xdg')
    mkdirSync(join(home, 'xdg', 'Burnrate'), { recursive: true })
    const cfg = join(home, 'xdg', 'Burnrate', 'config.yaml')
    writeFileSync(cfg, `data_dir: ${join(home, 'moved')}\n`)
    expect(await cli('connect', 'claude-code')).toBe(0)
    writeFileSync(cfg, `data_dir: ${join(home, 'moved')}\nserver: {port: "http"}\n`)
    expect(await cli('disconnect', 'claude-code')).toBe(0)
    expect(err).toContain(`with the records in ${join(home, 'moved')}`)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
  })

  it("finds them under a relative data_dir in the config's own folder, as the server does, also in a config that does not load", async () => {
    delete process.env.BURNRATE_DATA_DIR
    process.env.XDG_CONFIG_HOME = join(home, 'xdg')
    mkdirSync(join(home, 'xdg', 'Burnrate'), { recursive: true })
    const cfg = join(home, 'xdg', 'Burnrate', 'config.yaml')
    writeFileSync(cfg, 'data_dir: moved\n')
    expect(await cli('connect', 'claude-code')).toBe(0)
    expect(existsSync(join(home, 'xdg', 'Burnrate', 'moved', 'agent-connections.json'))).toBe(true)
    writeFileSync(cfg, 'data_dir: moved\nserver: {port: "http"}\n')
    expect(await cli('disconnect', 'claude-code')).toBe(0)
    expect(err).toContain(`with the records in ${join(home, 'xdg', 'Burnrate', 'moved')}`)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
  })

  it("a record file that is not JSON is named, with what to do, and nothing is written (exit 1)", async () => {
    mkdirSync(join(home, 'data'), { recursive: true })
    writeFileSync(join(home, 'data', 'agent-connections.json'), '{"version":1,\n')
    expect(await cli('connect', 'claude-code')).toBe(1)
    expect(err).toContain(`${join(home, 'data', 'agent-connections.json')} (Burnrate's record of the agents it connected) is not valid JSON`)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
  })

  it('an empty --tenant is refused (exit 2): through a server it would mean every tenant, from the file the calls with none', async () => {
    for (const cmd of [['export'], ['report', 'daily'], ['status']]) {
      expect(await cli(...cmd, '--tenant', '', '--local')).toBe(2)
      expect(err).toContain("option '--tenant <id>' argument '' is invalid. give a tenant id; leave --tenant out for every tenant")
    }
  })

  it('server.port 0 (a free port at each start): points at the running server, or says there is no address', async () => {
    process.env.BURNRATE_PORT = '0'
    expect(await cli('connect', 'claude-code')).toBe(2)
    expect(err).toContain('server.port is 0 (a free port at each start) and no Burnrate serves this data folder now')
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
    expect(await cli('connect', 'claude-code', '--url', 'http://127.0.0.1:0')).toBe(2)
    expect(err).toContain('names port 0')
    // A server on this data folder, on the port the system gave it.
    const { startTestServer } = await import('../support/server')
    mkdirSync(join(home, 'data'), { recursive: true })
    const t = await startTestServer({}, undefined, join(home, 'data'))
    try {
      expect(await cli('connect', 'claude-code')).toBe(0)
      expect(out).toContain(`claude-code: connected to ${t.url}`)
      expect(err).toContain(`server.port is 0: pointing at the running server's ${t.url}`)
      expect(JSON.parse(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).env.ANTHROPIC_BASE_URL).toBe(t.url)
    } finally {
      await t.cleanup()
    }
  })
})
