import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { parse as parseToml } from '@decimalturn/toml-patch'
import * as jsonc from 'jsonc-parser'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CONNECTORS } from './registry'
import { AgentConnections, ConnectError, normaliseUrl } from './connections'
import type { ConnectPlan } from '../../shared/connect'
import type { AgentConnector } from './types'
import { BLOCK_BEGIN } from './formats/shell-block'

/** Re-points every connected agent that points elsewhere at `url` (what a port change's move did to all of them). */
function repointAll(conn: AgentConnections, url: string): { agent: string; plan?: ConnectPlan; error?: ConnectError }[] {
  const u = normaliseUrl(url)
  return conn
    .connected()
    .filter((r) => r.url !== u)
    .map(({ agent }) => {
      try {
        return { agent, plan: conn.connect(agent, u) }
      } catch (err) {
        if (err instanceof ConnectError) return { agent, error: err }
        throw err
      }
    })
}

const URL_A = 'http://127.0.0.1:8787'
const URL_B = 'http://127.0.0.1:8799'

let home: string
let dataDir: string

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-home-'))
  dataDir = join(home, 'burnrate-data')
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

function connections(env: NodeJS.ProcessEnv = {}): AgentConnections {
  return new AgentConnections({ home, env: { PATH: '', SHELL: '/bin/zsh', ...env }, platform: 'linux', dataDir })
}

function put(rel: string, text: string): string {
  const path = join(home, rel)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
  return path
}
const read = (rel: string) => readFileSync(join(home, rel), 'utf8')

const CLAUDE = `{
    // my settings
    "model": "opus",
    "env": {
        "ANTHROPIC_API_KEY": "sk-ant-keep-me",
        "DISABLE_TELEMETRY": "1"
    },
    "permissions": { "allow": ["Bash(npm test)"] }
}
`

const CODEX = `# Codex config, tuned by hand
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

[model_providers.azure]
name = "Azure"
base_url = "https://me.openai.azure.com/openai"  # my deployment
env_key = "AZURE_OPENAI_API_KEY"
wire_api = "responses"

[profiles.fast]
model = "o4-mini"
`

const GEMINI_ENV = `# gemini
GEMINI_API_KEY=AIza-keep-me
export GEMINI_MODEL=gemini-2.5-pro
`

const OPENCODE = `{
  "$schema": "https://opencode.ai/config.json",
  // providers I use
  "provider": {
    "openrouter": { "options": { "apiKey": "{env:OPENROUTER_API_KEY}" } },
    "anthropic": { "models": { "claude-sonnet-4-5": {} } }
  },
  "theme": "tokyonight",
}
`

const ZSHRC = `# zsh
export PATH="$HOME/bin:$PATH"
export OPENAI_BASE_URL=https://gateway.corp/v1
alias ll='ls -l'
`

interface Case {
  agent: string
  file: string
  original: string
  /** The settings Burnrate must have written, read back with a real parser. */
  check(text: string, url: string): void
  /** Someone else's edit to the file while connected. */
  userEdit(text: string): string
  /** The user's edit survives disconnect. */
  keptEdit: string
}

const CASES: Case[] = [
  {
    agent: 'claude-code',
    file: '.claude/settings.json',
    original: CLAUDE,
    check(text, url) {
      const v = jsonc.parse(text)
      // The Vertex AI address too, which Claude Code reads only on Vertex AI.
      expect(v.env).toEqual({ ANTHROPIC_API_KEY: 'sk-ant-keep-me', DISABLE_TELEMETRY: '1', ANTHROPIC_BASE_URL: url, ANTHROPIC_VERTEX_BASE_URL: `${url}/vertex/v1` })
      expect(v.model).toBe('opus')
      expect(text).toContain('// my settings')
    },
    userEdit: (t) => t.replace('"model": "opus"', '"model": "sonnet"'),
    keptEdit: '"model": "sonnet"',
  },
  {
    agent: 'codex',
    file: '.codex/config.toml',
    original: CODEX,
    check(text, url) {
      const v = parseToml(text)
      expect(v.openai_base_url).toBe(`${url}/v1`)
      expect(v.model_providers.azure.base_url).toBe('https://me.openai.azure.com/openai')
      expect(v.model_provider).toBeUndefined()
      expect(text).toContain('# my deployment')
    },
    userEdit: (t) => t.replace('approval_policy = "on-request"', 'approval_policy = "never"'),
    keptEdit: 'approval_policy = "never"',
  },
  {
    agent: 'gemini-cli',
    file: '.gemini/.env',
    original: GEMINI_ENV,
    check(text, url) {
      expect(text).toContain(`GOOGLE_GEMINI_BASE_URL=${url}\n`)
      // Logged in with Google, Gemini CLI talks to Gemini Code Assist at this address instead.
      expect(text).toContain(`CODE_ASSIST_ENDPOINT=${url}/code-assist\n`)
      // On Vertex AI.
      expect(text).toContain(`GOOGLE_VERTEX_BASE_URL=${url}/vertex\n`)
      expect(text).toContain('GEMINI_API_KEY=AIza-keep-me')
    },
    userEdit: (t) => t + 'GEMINI_SANDBOX=false\n',
    keptEdit: 'GEMINI_SANDBOX=false',
  },
  {
    agent: 'opencode',
    file: '.config/opencode/opencode.json',
    original: OPENCODE,
    check(text, url) {
      const v = jsonc.parse(text)
      expect(v.provider.anthropic).toEqual({ models: { 'claude-sonnet-4-5': {} }, options: { baseURL: `${url}/v1` } })
      expect(v.provider.openai).toBeUndefined()
      expect(v.provider.openrouter.options.apiKey).toBe('{env:OPENROUTER_API_KEY}')
      expect(text).toContain('// providers I use')
    },
    userEdit: (t) => t.replace('"tokyonight"', '"nord"'),
    keptEdit: '"theme": "nord"',
  },
  {
    agent: 'sdk',
    file: '.zshrc',
    original: ZSHRC,
    check(text, url) {
      expect(text.startsWith(ZSHRC)).toBe(true)
      expect(text).toContain(`${BLOCK_BEGIN}\n`)
      expect(text).toContain(`export OPENAI_BASE_URL=${url}/v1\nexport ANTHROPIC_BASE_URL=${url}\n`)
    },
    userEdit: (t) => t.replace("alias ll='ls -l'", "alias ll='ls -la'"),
    keptEdit: "alias ll='ls -la'",
  },
]

describe.each(CASES)('$agent', (c) => {
  it('connects with only its own settings changed, and disconnect restores the file byte for byte', () => {
    put(c.file, c.original)
    const conn = connections()
    const plan = conn.planConnect(c.agent, URL_A)
    expect(plan.noop).toBe(false)
    expect(plan.changes).toHaveLength(1)
    expect(plan.changes[0].file).toBe(`~/${c.file}`)
    expect(plan.changes[0].diff).toMatch(/^\+.*127\.0\.0\.1:8787/m)
    expect(read(c.file)).toBe(c.original) // a plan writes nothing

    conn.connect(c.agent, URL_A, { planId: plan.id })
    c.check(read(c.file), URL_A)
    const status = conn.list().find((s) => s.agent === c.agent)!
    expect(status).toMatchObject({ connected: true, url: URL_A, changed_since: false, error: null })
    expect(status.settings.every((s) => s.value?.startsWith(URL_A))).toBe(true)

    conn.disconnect(c.agent)
    expect(read(c.file)).toBe(c.original)
    expect(conn.list().find((s) => s.agent === c.agent)!.connected).toBe(false)
    // The backup is gone once restored: copies of config files (which may hold keys) do not pile up.
    expect(readdirSync(join(dataDir, 'agent-backups', c.agent))).toEqual([])
  })

  it('connecting twice changes nothing the second time and still restores the original', () => {
    put(c.file, c.original)
    const conn = connections()
    conn.connect(c.agent, URL_A)
    const once = read(c.file)
    const again = conn.planConnect(c.agent, URL_A)
    expect(again.noop).toBe(true)
    conn.connect(c.agent, URL_A)
    expect(read(c.file)).toBe(once)
    conn.disconnect(c.agent)
    expect(read(c.file)).toBe(c.original)
  })

  it("keeps the user's edits made while connected and removes only Burnrate's settings", () => {
    put(c.file, c.original)
    const conn = connections()
    conn.connect(c.agent, URL_A)
    writeFileSync(join(home, c.file), c.userEdit(read(c.file)))
    conn.disconnect(c.agent)
    const after = read(c.file)
    expect(after).toBe(c.userEdit(c.original))
    expect(after).toContain(c.keptEdit)
  })

  it("keeps the user's edits made before a re-point (a new port) on disconnect", () => {
    put(c.file, c.original)
    const conn = connections()
    conn.connect(c.agent, URL_A)
    writeFileSync(join(home, c.file), c.userEdit(read(c.file)))
    // Burnrate restarted on another port and the notification was clicked: the text written now
    // holds the user's edit, so the backup from before Burnrate is no longer the file without it.
    expect(repointAll(conn, URL_B)[0].error).toBeUndefined()
    expect(conn.list().find((s) => s.agent === c.agent)!.settings.every((s) => s.value?.startsWith(URL_B))).toBe(true)
    expect(read(c.file)).toContain(c.keptEdit)
    conn.disconnect(c.agent)
    expect(read(c.file)).toBe(c.userEdit(c.original))
    expect(readdirSync(join(dataDir, 'agent-backups', c.agent))).toEqual([])
  })

  it('refuses a read-only file and writes nothing', () => {
    const path = put(c.file, c.original)
    chmodSync(path, 0o444)
    const conn = connections()
    expect(() => conn.connect(c.agent, URL_A)).toThrow(expect.objectContaining({ code: 'read_only', message: expect.stringContaining('is read-only') }))
    expect(read(c.file)).toBe(c.original)
    expect(conn.connected()).toEqual([])
    expect(existsSync(join(dataDir, 'agent-connections.json'))).toBe(false)
  })

  it('creates the file when there is none and removes it again on disconnect, with the folders it made for it', () => {
    const conn = connections()
    const installed = conn.list().find((s) => s.agent === c.agent)!.installed
    conn.connect(c.agent, URL_A)
    expect(conn.list().find((s) => s.agent === c.agent)!.settings.every((s) => s.value?.startsWith(URL_A))).toBe(true)
    conn.disconnect(c.agent)
    expect(existsSync(join(home, c.file))).toBe(false)
    // The agent's config folder left behind would make it look installed.
    expect(readdirSync(home)).toEqual(['burnrate-data'])
    expect(conn.list().find((s) => s.agent === c.agent)!.installed).toBe(installed)
  })

  it('re-points to a new address and disconnect still restores the very first state', () => {
    put(c.file, c.original)
    const conn = connections()
    conn.connect(c.agent, URL_A)
    const moved = repointAll(conn, URL_B)
    expect(moved.map((m) => m.agent)).toEqual([c.agent])
    c.check(read(c.file), URL_B)
    expect(conn.connected()).toEqual([{ agent: c.agent, url: URL_B }])
    conn.disconnect(c.agent)
    expect(read(c.file)).toBe(c.original)
  })
})

describe('a dotenv line with quotes and a comment', () => {
  it('keeps them while connected, and Disconnect after your own edit puts the line back as it was', () => {
    const original = 'GEMINI_API_KEY=AIza-keep-me\nexport GOOGLE_GEMINI_BASE_URL="https://gw.corp" # corp gateway\n'
    put('.gemini/.env', original)
    const conn = connections()
    conn.connect('gemini-cli', URL_A)
    expect(read('.gemini/.env')).toContain(`export GOOGLE_GEMINI_BASE_URL="${URL_A}" # corp gateway\n`)
    // You add a line of your own; Disconnect undoes Burnrate's keys one by one.
    put('.gemini/.env', read('.gemini/.env') + 'GEMINI_MODEL=gemini-2.5-pro\n')
    conn.disconnect('gemini-cli')
    expect(read('.gemini/.env')).toBe(original + 'GEMINI_MODEL=gemini-2.5-pro\n')
  })
})

describe('a dotenv value in quotes over several lines (a service-account PEM key)', () => {
  it('is read as dotenv reads it, kept byte for byte while connected and after Disconnect, also after your own edit', () => {
    const original = 'GEMINI_API_KEY=AIza-keep-me\nSA_KEY="-----BEGIN KEY-----\nabc=\n-----END KEY-----" # from the console\nNOTE=\'two\nlines\'\n'
    put('.gemini/.env', original)
    const conn = connections()
    conn.connect('gemini-cli', URL_A)
    expect(read('.gemini/.env')).toBe(`${original}GOOGLE_GEMINI_BASE_URL=${URL_A}\nCODE_ASSIST_ENDPOINT=${URL_A}/code-assist\nGOOGLE_VERTEX_BASE_URL=${URL_A}/vertex\n`)
    expect(conn.list().find((a) => a.agent === 'gemini-cli')).toMatchObject({ error: null, changed_since: false })
    conn.disconnect('gemini-cli')
    expect(read('.gemini/.env')).toBe(original)
    conn.connect('gemini-cli', URL_A)
    put('.gemini/.env', read('.gemini/.env') + 'GEMINI_MODEL=gemini-2.5-pro\n')
    conn.disconnect('gemini-cli')
    expect(read('.gemini/.env')).toBe(original + 'GEMINI_MODEL=gemini-2.5-pro\n')
    // A line after it that is not an assignment is still refused, named by its own line number.
    put('.gemini/.env', original + 'this is not an assignment\n')
    expect(() => conn.connect('gemini-cli', URL_A)).toThrow(expect.objectContaining({ code: 'malformed', message: expect.stringContaining('line 7 is not NAME=value') }))
  })
})

describe('a JSON settings file on one line (minified)', () => {
  it('stays on one line: only the edited key is added, and Disconnect puts the file back byte for byte', () => {
    const text = '{"model": "opus", "permissions": {"allow": ["Bash(ls)", "Read"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}\n'
    put('.claude/settings.json', text)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    const after = read('.claude/settings.json')
    expect(after.trimEnd().includes('\n')).toBe(false)
    expect(after.startsWith(text.trimEnd().slice(0, -1))).toBe(true)
    expect(JSON.parse(after).env.ANTHROPIC_BASE_URL).toBe(URL_A)
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe(text)
  })
})

describe('a JSON settings file saved with a byte order mark (Windows PowerShell 5.1: Set-Content -Encoding UTF8)', () => {
  it('is connected as Claude Code reads it, keeping the mark, and Disconnect puts it back byte for byte, also after your own edit', () => {
    const text = '\uFEFF{\r\n    "model": "opus"\r\n}\r\n'
    put('.claude/settings.json', text)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    const after = read('.claude/settings.json')
    expect(after.startsWith('\uFEFF{\r\n    "model": "opus",\r\n    "env": {\r\n')).toBe(true)
    expect(JSON.parse(after.slice(1)).env.ANTHROPIC_BASE_URL).toBe(URL_A)
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe(text)

    conn.connect('claude-code', URL_A)
    writeFileSync(join(home, '.claude/settings.json'), read('.claude/settings.json').replace('"opus"', '"sonnet"'))
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe(text.replace('"opus"', '"sonnet"'))
  })
})

describe("a Codex root key added right under Burnrate's line (by hand, or Codex saving model_reasoning_effort)", () => {
  const ORIGINAL = 'model = "gpt-5"\n\n# Azure, for work\n[model_providers.azure]\nname = "Azure"\n'
  const edit = (t: string) => t.replace(/^(openai_base_url = .*\n)/m, '$1model_reasoning_effort = "high"\n')
  const WANTED = 'model = "gpt-5"\n\n# Azure, for work\nmodel_reasoning_effort = "high"\n[model_providers.azure]\nname = "Azure"\n'

  it('Disconnect keeps the comment above the next table: only the line Burnrate wrote goes', () => {
    put('.codex/config.toml', ORIGINAL)
    const conn = connections()
    conn.connect('codex', URL_A)
    writeFileSync(join(home, '.codex/config.toml'), edit(read('.codex/config.toml')))
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(WANTED)
  })

  it('and so does a re-point (its new backup) and the Disconnect after it', () => {
    put('.codex/config.toml', ORIGINAL)
    const conn = connections()
    conn.connect('codex', URL_A)
    writeFileSync(join(home, '.codex/config.toml'), edit(read('.codex/config.toml')))
    expect(repointAll(conn, URL_B)[0].error).toBeUndefined()
    expect(read('.codex/config.toml')).toContain('# Azure, for work')
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(WANTED)
  })
})

describe('a table Codex appends while connected (it trusts a project folder)', () => {
  const ORIGINAL = 'model = "gpt-5"\n'
  const TRUSTED = '\n[projects."/home/me/app"]\ntrust_level = "trusted"\n'

  it('Disconnect keeps the file as it was with that table: its last line ending and no stray blank line', () => {
    put('.codex/config.toml', ORIGINAL)
    const conn = connections()
    conn.connect('codex', URL_A)
    writeFileSync(join(home, '.codex/config.toml'), read('.codex/config.toml') + TRUSTED)
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(ORIGINAL + TRUSTED)
  })

  it('also when the table was saved without a last line ending (an editor that adds none): no stray blank line', () => {
    put('.codex/config.toml', ORIGINAL)
    const conn = connections()
    conn.connect('codex', URL_A)
    writeFileSync(join(home, '.codex/config.toml'), read('.codex/config.toml') + TRUSTED.trimEnd())
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(ORIGINAL + TRUSTED.trimEnd())
  })

  it('and so does a re-point (its new backup) and the Disconnect after it', () => {
    put('.codex/config.toml', ORIGINAL)
    const conn = connections()
    conn.connect('codex', URL_A)
    writeFileSync(join(home, '.codex/config.toml'), read('.codex/config.toml') + TRUSTED)
    expect(repointAll(conn, URL_B)[0].error).toBeUndefined()
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(ORIGINAL + TRUSTED)
  })
})

describe('a JSON settings file with a key twice', () => {
  it('is refused, naming the key and its line: the agent reads the last, the edit would have gone into the first', () => {
    const text = '{\n  "env": {"A": "1"},\n  "model": "opus",\n  "env": {"B": "2"}\n}\n'
    put('.claude/settings.json', text)
    let error: unknown
    try {
      connections().connect('claude-code', URL_A)
    } catch (err) {
      error = err
    }
    expect(error).toMatchObject({ code: 'malformed', message: expect.stringContaining('~/.claude/settings.json is ambiguous: the key "env" is in one object twice (line 4, column 3)') })
    expect(read('.claude/settings.json')).toBe(text)
  })
})

describe('files that do not parse', () => {
  it.each([
    ['claude-code', '.claude/settings.json', '{ "env": { "A": 1, }\n  "model": \n'],
    ['codex', '.codex/config.toml', 'model = "gpt-5"\n[profiles\n'],
    ['gemini-cli', '.gemini/.env', 'GEMINI_API_KEY=x\nthis is not an assignment\n'],
    ['opencode', '.config/opencode/opencode.json', '[1, 2]\n'],
  ])('%s: a clear error naming the file, nothing written', (agent, file, text) => {
    put(file, text)
    const conn = connections()
    let error: unknown
    try {
      conn.connect(agent, URL_A)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConnectError)
    expect(error).toMatchObject({ code: 'malformed', message: expect.stringContaining(`~/${file} is not`) })
    expect((error as Error).message).toContain('Burnrate wrote nothing')
    expect(read(file)).toBe(text)
    expect(conn.list().find((s) => s.agent === agent)!.error).toContain(`~/${file}`)
  })

  it.each([
    ['model = "o3"\n\n[tui]\nx = 1\nx = 2\n', 'Value already defined for tui.x at line 5, column 1'],
    ['model = \n', 'Expected value, reached EOF at line 1, column 1'],
    ['a = "x\ny"\n', 'Newline (0x0A) not allowed in basic strings at line 1, column 7'],
  ])('codex: the TOML parser\'s reason, with its line and column (%j)', (text, reason) => {
    put('.codex/config.toml', text)
    expect(() => connections().connect('codex', URL_A)).toThrow(
      expect.objectContaining({ code: 'malformed', message: `~/.codex/config.toml is not valid TOML: ${reason}; fix it first (Burnrate wrote nothing).` }),
    )
  })
})

describe('a file that is not UTF-8 (a profile saved in Latin-1)', () => {
  it.each([
    ['sdk', '.zshrc', '# Gr\xf6\xdfe\nexport NAME="Jos\xe9"\n'],
    ['gemini-cli', '.gemini/.env', 'GEMINI_API_KEY=x\nGEMINI_SYSTEM_MD=C:\\Users\\Jos\xe9\\gemini.md\n'],
    ['claude-code', '.claude/settings.json', '{\n  "model": "opus", // Jos\xe9\n}\n'],
    ['codex', '.codex/config.toml', '# Jos\xe9\nmodel = "gpt-5"\n'],
  ])('%s: is refused, its bytes kept (read as UTF-8 and written back, they would be lost, in the backup too)', (agent, file, latin1) => {
    const path = join(home, file)
    mkdirSync(dirname(path), { recursive: true })
    const bytes = Buffer.from(latin1, 'latin1')
    writeFileSync(path, bytes)
    const conn = connections()
    expect(() => conn.connect(agent, URL_A)).toThrow(
      expect.objectContaining({ code: 'malformed', message: `~/${file} is not UTF-8 text, which Burnrate edits; save it as UTF-8 first (Burnrate wrote nothing).` }),
    )
    expect(readFileSync(path).equals(bytes)).toBe(true)
    expect(conn.connected()).toEqual([])
    expect(conn.list().find((s) => s.agent === agent)!.error).toContain('is not UTF-8 text')
  })
})

describe('a connected file that later gains bytes that are not UTF-8 (a line saved in Latin-1)', () => {
  it.each([
    ['sdk', '.zshrc', '# Größe\nexport EDITOR=vim\n', 'export NAME="Jos\xe9"\n'],
    ['claude-code', '.claude/settings.json', '{\n  "model": "opus" // Größe\n}\n', '// Jos\xe9\n'],
    ['codex', '.codex/config.toml', '# Größe\nmodel = "gpt-5"\n', '# Jos\xe9\n'],
  ])('%s: Disconnect still takes Burnrate out (refused, the agent stayed pointed at it), every other byte kept', (agent, file, text, line) => {
    put(file, text)
    const conn = connections()
    conn.connect(agent, URL_A)
    expect(read(file)).toContain(URL_A)
    const added = Buffer.from(line, 'latin1')
    writeFileSync(join(home, file), Buffer.concat([readFileSync(join(home, file)), added]))
    const results = conn.disconnectAll()
    expect(results.map((r) => r.error?.message)).toEqual([undefined])
    expect(conn.connected()).toEqual([])
    const after = readFileSync(join(home, file))
    expect(after.includes(Buffer.from(URL_A))).toBe(false)
    expect(after.includes(added)).toBe(true)
    expect(after.includes(Buffer.from('Größe'))).toBe(true)
  })
})

describe('files where a key must go into something that is not an object', () => {
  it.each([
    ['claude-code', '.claude/settings.json', '{\n  "env": null\n}\n', 'env = null'],
    ['claude-code', '.claude/settings.json', '{\n  "env": "x"\n}\n', 'env = x'],
    ['opencode', '.config/opencode/opencode.json', '{\n  "provider": { "anthropic": [1] }\n}\n', 'provider.anthropic = [1]'],
  ])('%s %s: a clear error naming the file and key, nothing written', (agent, file, text, shown) => {
    put(file, text)
    const conn = connections()
    expect(() => conn.connect(agent, URL_A)).toThrow(ConnectError)
    expect(() => conn.connect(agent, URL_A)).toThrow(expect.objectContaining({ code: 'malformed', message: expect.stringContaining(`~/${file} has ${shown}, where`) }))
    expect(read(file)).toBe(text)
    expect(conn.connected()).toEqual([])
  })
})

describe('agent connections', () => {
  it('leaves a setting the user changed by hand since connecting, and says so', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    writeFileSync(join(home, '.claude/settings.json'), read('.claude/settings.json').replace(URL_A, 'https://my-gateway.example'))
    expect(conn.list().find((s) => s.agent === 'claude-code')!.changed_since).toBe(true)
    const plan = conn.planDisconnect('claude-code')
    expect(plan.notes.join(' ')).toMatch(/env\.ANTHROPIC_BASE_URL was changed since Burnrate set it \(now https:\/\/my-gateway\.example\); left as it is/)
    conn.disconnect('claude-code')
    expect(jsonc.parse(read('.claude/settings.json')).env.ANTHROPIC_BASE_URL).toBe('https://my-gateway.example')
    expect(conn.connected()).toEqual([])
  })

  it('a re-point leaves a setting the user changed by hand since connecting, says so, and Disconnect keeps it', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    writeFileSync(join(home, '.claude/settings.json'), read('.claude/settings.json').replace(`"ANTHROPIC_BASE_URL": "${URL_A}"`, '"ANTHROPIC_BASE_URL": "https://gateway.corp"'))
    const [moved] = repointAll(conn, URL_B)
    expect(moved.plan!.notes.join(' ')).toMatch(/env\.ANTHROPIC_BASE_URL was changed since Burnrate set it \(now https:\/\/gateway\.corp\); left as it is/)
    let env = jsonc.parse(read('.claude/settings.json')).env
    expect(env.ANTHROPIC_BASE_URL).toBe('https://gateway.corp')
    expect(env.ANTHROPIC_VERTEX_BASE_URL).toBe(`${URL_B}/vertex/v1`)
    conn.disconnect('claude-code')
    env = jsonc.parse(read('.claude/settings.json')).env
    expect(env.ANTHROPIC_BASE_URL).toBe('https://gateway.corp')
    expect(env.ANTHROPIC_VERTEX_BASE_URL).toBeUndefined()
    expect(env.ANTHROPIC_API_KEY).toBe('sk-ant-keep-me')
  })

  it('a connect Burnrate cannot record leaves the agent as it was, with a clear error', () => {
    // The backups folder cannot be made (here a file is in its way; a full disk does the same).
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(join(dataDir, 'agent-backups'), '')
    const conn = connections()
    // A new file: the copy of what is to be written is saved first, and fails; nothing is written.
    expect(() => conn.connect('claude-code', URL_A)).toThrow(expect.objectContaining({ code: 'not_saved', message: expect.stringContaining('Burnrate wrote nothing') }))
    expect(existsSync(join(home, '.claude/settings.json'))).toBe(false)
    // An existing file needs its backup first: nothing is written.
    put('.claude/settings.json', CLAUDE)
    expect(() => conn.connect('claude-code', URL_A)).toThrow(expect.objectContaining({ code: 'not_saved', message: expect.stringContaining('Burnrate wrote nothing') }))
    expect(read('.claude/settings.json')).toBe(CLAUDE)
    expect(conn.connected()).toEqual([])
  })

  it('records moved away to start again (as the message for a broken one says): the backups stay, for the user to put back by hand', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    const backups = readdirSync(join(dataDir, 'agent-backups', 'claude-code'))
    expect(backups.length).toBeGreaterThan(0)
    renameSync(join(dataDir, 'agent-connections.json'), join(home, 'old-connections.json'))
    put('.codex/config.toml', 'model = "o3"\n')
    conn.connect('codex', URL_A)
    conn.disconnect('claude-code')
    expect(readdirSync(join(dataDir, 'agent-backups', 'claude-code'))).toEqual(backups)
  })

  it('a connect whose data folder cannot be made says so as a refusal, with nothing written', () => {
    put('.claude/settings.json', CLAUDE)
    writeFileSync(join(home, 'not-a-folder'), '')
    const conn = new AgentConnections({ home, env: {}, platform: 'linux', dataDir: join(home, 'not-a-folder', 'data') })
    expect(() => conn.connect('claude-code', URL_A)).toThrow(expect.objectContaining({ code: 'not_saved', message: expect.stringContaining('Burnrate wrote nothing') }))
    expect(read('.claude/settings.json')).toBe(CLAUDE)
  })

  it('a disconnect Burnrate cannot record leaves the agent connected, so it can be tried again', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    const connected = read('.claude/settings.json')
    // The connection record cannot be saved (its temporary file's name is taken by a folder).
    const blocker = join(dataDir, `agent-connections.json.burnrate-${process.pid}.tmp`)
    mkdirSync(blocker)
    expect(() => conn.disconnect('claude-code')).toThrow(expect.objectContaining({ code: 'not_saved' }))
    expect(read('.claude/settings.json')).toBe(connected)
    expect(conn.connected()).toEqual([{ agent: 'claude-code', url: URL_A }])
    rmSync(blocker, { recursive: true })
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe(CLAUDE)
  })

  it('puts back a value the user had before (Codex pointing at another gateway)', () => {
    const text = CODEX.replace('approval_policy', 'openai_base_url = "https://gateway.corp/v1"\napproval_policy')
    put('.codex/config.toml', text)
    const conn = connections()
    const plan = conn.planConnect('codex', URL_A)
    expect(plan.changes[0].settings).toEqual([{ key: 'openai_base_url', from: 'https://gateway.corp/v1', to: `${URL_A}/v1` }])
    conn.connect('codex', URL_A)
    // Changed by the user elsewhere in the file, so the key-by-key restore runs.
    writeFileSync(join(home, '.codex/config.toml'), read('.codex/config.toml') + '\n[profiles.slow]\nmodel = "o3"\n')
    conn.disconnect('codex')
    expect(read('.codex/config.toml')).toBe(text + '\n[profiles.slow]\nmodel = "o3"\n')
  })

  it('removes the objects it created when they are left empty, keeps them when the user added to them', () => {
    put('.claude/settings.json', '{\n  "model": "opus"\n}\n')
    const conn = connections()
    conn.connect('claude-code', URL_A)
    expect(read('.claude/settings.json')).toBe(`{\n  "model": "opus",\n  "env": {\n    "ANTHROPIC_BASE_URL": "${URL_A}",\n    "ANTHROPIC_VERTEX_BASE_URL": "${URL_A}/vertex/v1"\n  }\n}\n`)
    writeFileSync(join(home, '.claude/settings.json'), read('.claude/settings.json').replace('"opus"', '"haiku"'))
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe('{\n  "model": "haiku"\n}\n')
  })

  it('an agent connected before a release added a setting gets it on the next connect or re-point, and disconnect still restores the file', () => {
    const original = put('.claude/settings.json', '{\n  "model": "opus"\n}\n')
    const text = readFileSync(original, 'utf8')
    // The release before: Claude Code's connector wrote ANTHROPIC_BASE_URL only.
    const claude = CONNECTORS.find((c) => c.id === 'claude-code')!
    const before: AgentConnector = { ...claude, files: (ctx, url) => claude.files(ctx, url).map((f) => ({ ...f, settings: f.settings.slice(0, 1) })) }
    new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir, connectors: [before] }).connect('claude-code', URL_A)
    expect(jsonc.parse(read('.claude/settings.json')).env).toEqual({ ANTHROPIC_BASE_URL: URL_A })
    // This release: the port changed, so the agent is re-pointed, and the new setting is written and recorded.
    const conn = connections()
    expect(repointAll(conn, URL_B).map((r) => r.agent)).toEqual(['claude-code'])
    expect(jsonc.parse(read('.claude/settings.json')).env).toEqual({ ANTHROPIC_BASE_URL: URL_B, ANTHROPIC_VERTEX_BASE_URL: `${URL_B}/vertex/v1` })
    // Edited by the user meanwhile, so the key-by-key undo runs: both keys go, and the env object Burnrate created.
    writeFileSync(original, read('.claude/settings.json').replace('"opus"', '"haiku"'))
    const plan = conn.disconnect('claude-code')
    expect(plan.changes[0].settings.map((x) => x.key)).toEqual(['env.ANTHROPIC_BASE_URL', 'env.ANTHROPIC_VERTEX_BASE_URL'])
    expect(read('.claude/settings.json')).toBe(text.replace('"opus"', '"haiku"'))
  })

  it('refuses to apply a plan whose files changed after it was shown', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    const plan = conn.planConnect('claude-code', URL_A)
    writeFileSync(join(home, '.claude/settings.json'), CLAUDE.replace('opus', 'sonnet'))
    expect(() => conn.connect('claude-code', URL_A, { planId: plan.id })).toThrow(expect.objectContaining({ code: 'conflict' }))
    expect(read('.claude/settings.json')).toBe(CLAUDE.replace('opus', 'sonnet'))
  })

  it('follows CODEX_HOME, CLAUDE_CONFIG_DIR, XDG_CONFIG_HOME and GEMINI_CLI_HOME', () => {
    const conn = connections({ CODEX_HOME: join(home, 'codex-home'), CLAUDE_CONFIG_DIR: join(home, 'claude-dir'), XDG_CONFIG_HOME: join(home, 'xdg'), GEMINI_CLI_HOME: join(home, 'gemini-home') })
    conn.connect('codex', URL_A)
    conn.connect('claude-code', URL_A)
    conn.connect('opencode', URL_A)
    expect(existsSync(join(home, 'codex-home/config.toml'))).toBe(true)
    expect(existsSync(join(home, 'claude-dir/settings.json'))).toBe(true)
    expect(existsSync(join(home, 'xdg/opencode/opencode.json'))).toBe(true)
    // Gemini CLI's homedir() is $GEMINI_CLI_HOME: it reads $GEMINI_CLI_HOME/.gemini/.env, never ~/.gemini/.env.
    expect(conn.list().find((a) => a.agent === 'gemini-cli')!.installed).toBe(false)
    put('gemini-home/.gemini/settings.json', '{}\n')
    expect(conn.list().find((a) => a.agent === 'gemini-cli')!.installed).toBe(true)
    expect(conn.connect('gemini-cli', URL_A).changes.map((ch) => ch.file)).toEqual(['~/gemini-home/.gemini/.env'])
    expect(existsSync(join(home, '.gemini'))).toBe(false)
    // Its `.env` when that is the one it reads there.
    conn.disconnect('gemini-cli')
    put('gemini-home/.env', GEMINI_ENV)
    expect(conn.connect('gemini-cli', URL_A).changes.map((ch) => ch.file)).toEqual(['~/gemini-home/.env'])
  })

  it('creates new config files and folders private to the user (API keys go in ~/.gemini/.env)', () => {
    connections().connect('gemini-cli', URL_A)
    expect(statSync(join(home, '.gemini/.env')).mode & 0o777).toBe(0o600)
    expect(statSync(join(home, '.gemini')).mode & 0o777).toBe(0o700)
    // An existing file keeps its own mode.
    const path = put('.claude/settings.json', CLAUDE)
    chmodSync(path, 0o644)
    connections().connect('claude-code', URL_A)
    expect(statSync(path).mode & 0o777).toBe(0o644)
  })

  it('keeps a config folder it made once something else is in it', () => {
    const conn = connections()
    conn.connect('codex', URL_A)
    put('.codex/auth.json', '{}\n')
    conn.disconnect('codex')
    expect(readdirSync(join(home, '.codex'))).toEqual(['auth.json'])
  })

  it("Gemini CLI with its settings in ~/.env (which it reads when there is no ~/.gemini/.env): Burnrate's lines go there, never a new file hiding it", () => {
    const HOME_ENV = 'GEMINI_API_KEY=AIzaSyEXAMPLE0000000000000000000000000\nGOOGLE_CLOUD_PROJECT=my-project\n'
    put('.env', HOME_ENV)
    mkdirSync(join(home, '.gemini'), { recursive: true })
    const conn = connections()
    conn.connect('gemini-cli', URL_A)
    expect(existsSync(join(home, '.gemini/.env'))).toBe(false)
    const text = readFileSync(join(home, '.env'), 'utf8')
    expect(text.startsWith(HOME_ENV)).toBe(true)
    expect(text).toContain(`GOOGLE_GEMINI_BASE_URL=${URL_A}`)
    conn.disconnect('gemini-cli')
    expect(readFileSync(join(home, '.env'), 'utf8')).toBe(HOME_ENV)
    // With a ~/.gemini/.env (which Gemini CLI reads first), that one.
    put('.gemini/.env', GEMINI_ENV)
    conn.connect('gemini-cli', URL_A)
    expect(readFileSync(join(home, '.env'), 'utf8')).toBe(HOME_ENV)
    expect(readFileSync(join(home, '.gemini/.env'), 'utf8')).toContain(`GOOGLE_GEMINI_BASE_URL=${URL_A}`)
  })

  it('a re-point after the agent moved to another file puts the old one back (opencode.jsonc beside opencode.json; another login shell)', () => {
    const json = put('.config/opencode/opencode.json', OPENCODE.replace('"anthropic": { "models"', '"anthropic": { "options": { "baseURL": "https://gw.corp/v1" }, "models"'))
    const original = readFileSync(json, 'utf8')
    const conn = connections({ XDG_CONFIG_HOME: join(home, '.config') })
    conn.connect('opencode', URL_A)
    expect(readFileSync(json, 'utf8')).toContain(`"baseURL": "${URL_A}/v1"`)
    // The user starts an opencode.jsonc, which opencode reads first; the desktop re-points to another port.
    const jsonc = put('.config/opencode/opencode.jsonc', '{\n  // mine\n  "theme": "dark"\n}\n')
    const plan = conn.connect('opencode', URL_B)
    expect(plan.changes.map((ch) => ch.file).sort()).toEqual([jsonc, json].map((p) => p.replace(home, '~')).sort())
    expect(readFileSync(json, 'utf8')).toBe(original)
    expect(readFileSync(jsonc, 'utf8')).toContain(`"baseURL": "${URL_B}/v1"`)
    conn.disconnect('opencode')
    expect(readFileSync(json, 'utf8')).toBe(original)
    expect(readFileSync(jsonc, 'utf8')).toBe('{\n  // mine\n  "theme": "dark"\n}\n')
    // The backups of both are gone, the one put back at the re-point too.
    expect(readdirSync(join(dataDir, 'agent-backups', 'opencode'))).toEqual([])

    // SDK scripts: connected from bash, then again from zsh.
    const bashrc = put('.bashrc', '# my bashrc\nalias ll="ls -l"\n')
    put('.zshrc', ZSHRC)
    connections({ SHELL: '/bin/bash' }).connect('sdk', URL_A)
    expect(readFileSync(bashrc, 'utf8')).toContain('# >>> burnrate >>>')
    connections({ SHELL: '/bin/zsh' }).connect('sdk', URL_B)
    expect(readFileSync(bashrc, 'utf8')).toBe('# my bashrc\nalias ll="ls -l"\n')
    expect(readdirSync(join(dataDir, 'agent-backups', 'sdk')).filter((n) => n.includes('bashrc'))).toEqual([])
    connections({ SHELL: '/bin/zsh' }).disconnect('sdk')
    expect(readFileSync(join(home, '.zshrc'), 'utf8')).toBe(ZSHRC)
  })

  it("undoes a profile connected from another login shell in that profile's own syntax, keeping a value set there by hand", () => {
    put('.zshrc', ZSHRC)
    connections({ SHELL: '/bin/zsh' }).connect('sdk', URL_A)
    // The user points OpenAI scripts at their own gateway, by hand, in Burnrate's block; their login shell is fish now.
    writeFileSync(join(home, '.zshrc'), read('.zshrc').replace(`export OPENAI_BASE_URL=${URL_A}/v1`, 'export OPENAI_BASE_URL=https://mine.corp/v1'))
    const fish = connections({ SHELL: '/usr/bin/fish' })
    const plan = fish.connect('sdk', URL_A)
    expect(plan.notes).toEqual(['~/.zshrc: OPENAI_BASE_URL was changed since Burnrate set it (now https://mine.corp/v1); left as it is.'])
    expect(plan.changes.find((ch) => ch.file === '~/.zshrc')!.settings).toEqual([{ key: 'ANTHROPIC_BASE_URL', from: URL_A, to: null }])
    expect(read('.zshrc')).toContain('export OPENAI_BASE_URL=https://mine.corp/v1')
    expect(read('.zshrc')).not.toContain('ANTHROPIC_BASE_URL')
    fish.disconnect('sdk')
    // Disconnect from the other shell too: the old profile put back as Disconnect from zsh would, with no false notes.
    put('.zshrc', ZSHRC)
    connections({ SHELL: '/bin/zsh' }).connect('sdk', URL_A)
    writeFileSync(join(home, '.zshrc'), read('.zshrc') + 'export NVM_DIR="$HOME/.nvm"\n')
    const undone = fish.disconnect('sdk')
    expect(undone.notes).toEqual([])
    expect(undone.changes[0].settings.map((x) => x.key)).toEqual(['OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL'])
    expect(read('.zshrc')).toBe(ZSHRC + 'export NVM_DIR="$HOME/.nvm"\n')
  })

  it('shows an agent that now reads another file than the one Burnrate edited as changed, until connected again', () => {
    put('.env', 'GEMINI_API_KEY=k\n')
    const conn = connections()
    conn.connect('gemini-cli', URL_A)
    const gemini = () => conn.list().find((a) => a.agent === 'gemini-cli')!
    expect(gemini()).toMatchObject({ connected: true, changed_since: false })
    // A ~/.gemini/.env made since: Gemini CLI loads that one only, where Burnrate's lines are not.
    put('.gemini/.env', 'GEMINI_API_KEY=k\n')
    expect(gemini()).toMatchObject({ connected: true, changed_since: true })
    expect(gemini().settings.every((s) => s.value === null)).toBe(true)
    conn.connect('gemini-cli', URL_A)
    expect(gemini()).toMatchObject({ connected: true, changed_since: false })
    // SDK scripts connected from zsh, looked at from another login shell.
    connections({ SHELL: '/bin/zsh' }).connect('sdk', URL_A)
    expect(connections({ SHELL: '/bin/zsh' }).list().find((a) => a.agent === 'sdk')).toMatchObject({ connected: true, changed_since: false })
    expect(connections({ SHELL: '/usr/bin/fish' }).list().find((a) => a.agent === 'sdk')).toMatchObject({ connected: true, changed_since: true })
  })

  it('edits the real file behind a symlinked profile and keeps its mode', () => {
    const real = put('dotfiles/zshrc', ZSHRC)
    chmodSync(real, 0o600)
    symlinkSync(real, join(home, '.zshrc'))
    const conn = connections()
    conn.connect('sdk', URL_A)
    expect(statSync(join(home, '.zshrc'), { throwIfNoEntry: true }).isFile()).toBe(true)
    expect(read('dotfiles/zshrc')).toContain(BLOCK_BEGIN)
    expect(statSync(real).mode & 0o777).toBe(0o600)
    conn.disconnect('sdk')
    expect(read('dotfiles/zshrc')).toBe(ZSHRC)
  })

  it('refuses a profile with another hard link (a dotfile manager\'s copy), which replacing it would leave unchanged, and writes nothing', () => {
    const managed = put('dotfiles/zshrc', ZSHRC)
    linkSync(managed, join(home, '.zshrc'))
    const conn = connections()
    expect(() => conn.connect('sdk', URL_A)).toThrow(
      expect.objectContaining({ code: 'read_only', message: expect.stringMatching(/^~\/\.zshrc has 1 other hard link .*make this one a symlink .*Burnrate wrote nothing\.$/) }),
    )
    expect(read('.zshrc')).toBe(ZSHRC)
    expect(statSync(managed).nlink).toBe(2)
    expect(conn.connected()).toEqual([])
    // Made a symlink to the managed copy, as the message says: that one is edited, and put back.
    rmSync(join(home, '.zshrc'))
    symlinkSync(managed, join(home, '.zshrc'))
    conn.connect('sdk', URL_A)
    expect(read('dotfiles/zshrc')).toContain(BLOCK_BEGIN)
    expect(lstatSync(join(home, '.zshrc')).isSymbolicLink()).toBe(true)
    conn.disconnect('sdk')
    expect(read('dotfiles/zshrc')).toBe(ZSHRC)
  })

  it('refuses to disconnect a file hard-linked since, leaving both names and the record as they were', () => {
    put('.claude/settings.json', CLAUDE)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    const connected = read('.claude/settings.json')
    linkSync(join(home, '.claude/settings.json'), join(home, 'settings-copy.json'))
    expect(() => conn.disconnect('claude-code')).toThrow(expect.objectContaining({ code: 'read_only', message: expect.stringContaining('hard link') }))
    expect(read('.claude/settings.json')).toBe(connected)
    expect(read('settings-copy.json')).toBe(connected)
    expect(conn.connected()).toEqual([{ agent: 'claude-code', url: URL_A }])
    rmSync(join(home, 'settings-copy.json'))
    conn.disconnect('claude-code')
    expect(read('.claude/settings.json')).toBe(CLAUDE)
  })

  it('writes through a dangling symlink (a dotfile manager linked a file not made yet), which stays a link', () => {
    mkdirSync(join(home, '.claude'), { recursive: true })
    symlinkSync('../dotfiles/claude/settings.json', join(home, '.claude/settings.json'))
    const conn = connections()
    conn.connect('claude-code', URL_A)
    expect(lstatSync(join(home, '.claude/settings.json')).isSymbolicLink()).toBe(true)
    expect(jsonc.parse(read('dotfiles/claude/settings.json')).env.ANTHROPIC_BASE_URL).toBe(URL_A)
    conn.disconnect('claude-code')
    expect(lstatSync(join(home, '.claude/settings.json')).isSymbolicLink()).toBe(true)
    expect(existsSync(join(home, 'dotfiles/claude/settings.json'))).toBe(false)
  })

  it('removes the blank line it put before its profile block also when a line was appended after the block', () => {
    put('.zshrc', ZSHRC)
    const conn = connections()
    conn.connect('sdk', URL_A)
    // nvm's and conda's installers append to the profile.
    writeFileSync(join(home, '.zshrc'), read('.zshrc') + 'export NVM_DIR="$HOME/.nvm"\n')
    conn.disconnect('sdk')
    expect(read('.zshrc')).toBe(ZSHRC + 'export NVM_DIR="$HOME/.nvm"\n')
  })

  it('picks the profile of the login shell, and fish gets its own conf.d file', () => {
    connections({ SHELL: '/usr/bin/bash' }).connect('sdk', URL_A)
    expect(read('.bashrc')).toContain(`export ANTHROPIC_BASE_URL=${URL_A}`)
    connections({ SHELL: '/usr/bin/bash' }).disconnect('sdk')
    connections({ SHELL: '/usr/bin/fish' }).connect('sdk', URL_A)
    expect(read('.config/fish/conf.d/burnrate.fish')).toContain(`set -gx OPENAI_BASE_URL ${URL_A}/v1`)
  })

  it('keeps its records and backups private to the user', () => {
    put('.claude/settings.json', CLAUDE)
    connections().connect('claude-code', URL_A)
    expect(statSync(join(dataDir, 'agent-connections.json')).mode & 0o777).toBe(0o600)
    const [backup] = readdirSync(join(dataDir, 'agent-backups', 'claude-code'))
    expect(statSync(join(dataDir, 'agent-backups', 'claude-code', backup)).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(dataDir, 'agent-backups', 'claude-code', backup), 'utf8')).toBe(CLAUDE)
  })

  it('disconnects every agent at once', () => {
    put('.claude/settings.json', CLAUDE)
    put('.codex/config.toml', CODEX)
    const conn = connections()
    conn.connect('claude-code', URL_A)
    conn.connect('codex', URL_A)
    expect(conn.disconnectAll().map((r) => [r.agent, r.error])).toEqual([
      ['claude-code', undefined],
      ['codex', undefined],
    ])
    expect(read('.claude/settings.json')).toBe(CLAUDE)
    expect(read('.codex/config.toml')).toBe(CODEX)
  })

  it('says which agents look installed', () => {
    mkdirSync(join(home, '.codex'))
    const bin = join(home, 'bin')
    mkdirSync(bin)
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\n', { mode: 0o755 })
    const list = connections({ PATH: bin }).list()
    expect(Object.fromEntries(list.map((s) => [s.agent, s.installed]))).toMatchObject({ 'claude-code': true, codex: true, 'gemini-cli': false, opencode: false })
  })

  it('says when a proxy variable here would carry the agent\'s calls for Burnrate to the proxy, and what to add to NO_PROXY', () => {
    const proxied = connections({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: 'localhost,.corp' }).planConnect('claude-code', URL_A)
    expect(proxied.notes).toEqual([
      'HTTPS_PROXY is set here and NO_PROXY does not list 127.0.0.1: calls from Claude Code for http://127.0.0.1:8787 would go to that proxy, which cannot reach this machine. Before starting Claude Code, export NO_PROXY="${NO_PROXY:-$no_proxy}"; export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost" no_proxy="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost" in the shell (or profile) you start it from.',
    ])
    // Said on connecting too, and when already connected (the plan writes nothing then).
    const c = connections({ http_proxy: 'http://proxy.corp:3128' })
    expect(c.connect('codex', URL_A).notes.join(' ')).toMatch(/^http_proxy is set here and NO_PROXY does not list 127\.0\.0\.1: calls from Codex CLI for/)
    expect(c.planConnect('codex', URL_A)).toMatchObject({ noop: true, notes: [expect.stringContaining('http_proxy is set here')] })
    // Exempted, or no proxy: nothing to say.
    expect(connections({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '127.0.0.1,localhost' }).planConnect('claude-code', URL_A).notes).toEqual([])
    expect(connections().planConnect('claude-code', URL_A).notes).toEqual([])
    const win = new AgentConnections({ home, env: { HTTPS_PROXY: 'http://proxy.corp:3128' }, platform: 'win32', dataDir }).planConnect('claude-code', URL_A)
    expect(win.notes[0]).toMatch(/add 127\.0\.0\.1,localhost to the NO_PROXY environment variable\.$/)
  })

  it("says when a variable Burnrate writes to Gemini CLI's env file is set here already, which Gemini CLI keeps over the file's", () => {
    put('.gemini/.env', GEMINI_ENV)
    const plan = connections({ GOOGLE_GEMINI_BASE_URL: 'https://gateway.corp/gemini', CODE_ASSIST_ENDPOINT: 'https://gateway.corp/ca' }).connect('gemini-cli', URL_A)
    expect(plan.changes.map((ch) => ch.file)).toEqual(['~/.gemini/.env'])
    expect(plan.notes).toEqual([
      "GOOGLE_GEMINI_BASE_URL, CODE_ASSIST_ENDPOINT are set here to another address: Gemini CLI started from this shell keeps those values over ~/.gemini/.env's, so its calls for http://127.0.0.1:8787 would not go through Burnrate. Unset GOOGLE_GEMINI_BASE_URL, CODE_ASSIST_ENDPOINT in the shell (or profile) you start Gemini CLI from.",
    ])
    // Set to Burnrate's own address, or in Claude Code's settings `env` (which wins over the shell): nothing to say.
    expect(connections({ GOOGLE_GEMINI_BASE_URL: URL_A }).planConnect('gemini-cli', URL_A).notes).toEqual([])
    expect(connections({ ANTHROPIC_BASE_URL: 'https://gateway.corp/anthropic' }).planConnect('claude-code', URL_A).notes).toEqual([])
  })

  it('rejects an unknown agent', () => {
    expect(() => connections().planConnect('vim', URL_A)).toThrow(expect.objectContaining({ code: 'unknown_agent' }))
  })
})
