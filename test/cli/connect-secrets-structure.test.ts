import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

/**
 * The built CLI's plans, on agents' files whose secrets are not in a provider's shape and do not
 * sit on one line beside their key: a TOML multi-line string, a header in Codex's http_headers,
 * a JSON value on the line after its key, the items of an array. Each must be hinted by the key it
 * sits under, wherever its text falls; harmless values under key-like names shown as they are.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

// Made-up secrets in no provider's shape, each short enough to sit alone on a line.
const BEARER = 'corp-gw-4f1d9a7c2b'
const HEADER = 'gw-77aa-31bb-92'
const ENV_HEADER = 'CORP_GATEWAY_VAR'
const AUTH_TOKEN = 'corp-token-0123456789'
const LISTED = ['tok-aaaa-1111-bbbb', 'tok-cccc-2222-dddd']
const SECRETS = [BEARER, HEADER, AUTH_TOKEN, ...LISTED]

const CODEX = `model = "o3"
experimental_bearer_token = """
${BEARER}
"""

[model_providers.corp]
name = "Corp"
base_url = "https://gw.corp.example/v1"
http_headers = { "X-Corp-Gateway" = """
${HEADER}""" }
env_http_headers = { "X-Corp-Id" = '''
${ENV_HEADER}''' }
`
const CLAUDE = `{
  "env": {
    "CORP_TOKENS": [
      "${LISTED[0]}",
      "${LISTED[1]}"
    ],
    "ANTHROPIC_AUTH_TOKEN":
      "${AUTH_TOKEN}"
  },
  "apiKeyHelper": "~/bin/corp-key.sh"
}
`

let home: string
beforeAll(() => {
  if (!existsSync(CLI)) spawnSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-cli-structure-'))
  mkdirSync(join(home, '.codex'))
  writeFileSync(join(home, '.codex', 'config.toml'), CODEX)
  mkdirSync(join(home, '.claude'))
  writeFileSync(join(home, '.claude', 'settings.json'), CLAUDE)
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

function cli(...args: string[]): { status: number | null; out: string } {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, BURNRATE_DATA_DIR: join(home, 'data'), BURNRATE_PORT: '8793', SHELL: '/bin/bash' }
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, out: `${r.stdout}${r.stderr}` }
}

function expectNoSecret(text: string): void {
  for (const s of SECRETS) expect(text).not.toContain(s)
}

describe('burnrate connect (built CLI): secrets hinted by the key they sit under, whatever the line they fall on', () => {
  it('Codex: a bearer token in a """ string and a header in http_headers on a line of their own are hinted; env_http_headers names a variable, shown', () => {
    const r = cli('connect', 'codex', '--dry-run')
    expect(r.status).toBe(0)
    expectNoSecret(r.out)
    expect(r.out).toContain('\n experimental_bearer_token = """\n cor…7c2b\n """\n')
    const connected = cli('connect', 'codex')
    expect(connected.status).toBe(0)
    expectNoSecret(connected.out)
    // What is written keeps every value whole; only what is shown is hinted.
    const written = readFileSync(join(home, '.codex', 'config.toml'), 'utf8')
    for (const s of [BEARER, HEADER, ENV_HEADER]) expect(written).toContain(s)
    const off = cli('disconnect', 'codex', '--dry-run')
    expect(off.status).toBe(0)
    expectNoSecret(off.out)
    expect(cli('disconnect', 'codex').status).toBe(0)
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)
  })

  it('Codex: a table the user added under Burnrate\'s line since, shown beside it on disconnect: a header on a line of its own hinted, a variable\'s name shown', () => {
    rmSync(join(home, '.codex', 'config.toml'))
    const cases: [string, string][] = [
      [`[model_providers.corp]\nhttp_headers = { "X-Corp-Gateway" = """\n${HEADER}""" }\n`, ` gw-…b-92""" }\n`],
      [`[model_providers.corp]\nenv_http_headers = { "X-Corp-Id" = '''\n${ENV_HEADER}''' }\n`, ` ${ENV_HEADER}''' }\n`],
    ]
    for (const [table, shown] of cases) {
      expect(cli('connect', 'codex').status).toBe(0)
      const file = join(home, '.codex', 'config.toml')
      writeFileSync(file, `${readFileSync(file, 'utf8').trimEnd()}\n${table}`)
      const off = cli('disconnect', 'codex', '--dry-run')
      expect(off.status).toBe(0)
      expectNoSecret(off.out)
      expect(off.out).toContain(shown)
      expect(cli('disconnect', 'codex').status).toBe(0)
      expect(readFileSync(file, 'utf8')).toContain(table)
      rmSync(file)
    }
  })

  it('Claude Code: a value on the line after its key and the items of an array under a token name are hinted; the apiKeyHelper path is shown', () => {
    const r = cli('connect', 'claude-code', '--dry-run')
    expect(r.status).toBe(0)
    expectNoSecret(r.out)
    expect(r.out).toContain('       "tok…dddd"\n')
    expect(r.out).toContain('-      "cor…6789"\n')
    // A command that gets the key, under a key-like name, is no secret: shown as it is.
    expect(r.out).toContain('   "apiKeyHelper": "~/bin/corp-key.sh"\n')
    const connected = cli('connect', 'claude-code')
    expect(connected.status).toBe(0)
    expectNoSecret(connected.out)
    const written = readFileSync(join(home, '.claude', 'settings.json'), 'utf8')
    for (const s of [AUTH_TOKEN, ...LISTED]) expect(written).toContain(s)
    const off = cli('disconnect', 'claude-code', '--dry-run')
    expect(off.status).toBe(0)
    expectNoSecret(off.out)
    expect(cli('disconnect', 'claude-code').status).toBe(0)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
  })

  it('a refused file: the object a key must go in, quoted in the message, has its secrets hinted as the file\'s are', () => {
    const mine = `{\n  "env": [\n    "ANTHROPIC_AUTH_TOKEN=${AUTH_TOKEN}",\n    "DEBUG=1"\n  ]\n}\n`
    writeFileSync(join(home, '.claude', 'settings.json'), mine)
    const r = cli('connect', 'claude-code', '--dry-run')
    expect(r.status).toBe(1)
    expectNoSecret(r.out)
    expect(r.out).toContain('~/.claude/settings.json has env = ["ANTHROPIC_AUTH_TOKEN=cor…6789","DEBUG=1"], where env.ANTHROPIC_BASE_URL must go in an object')
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(mine)
  })

  it('Gemini CLI\'s .env and a shell profile: a quoted value that goes on over lines, under a secret\'s name, is hinted on its first line', () => {
    const env = `GEMINI_MODEL=gemini-2.5-pro\nCORP_GATEWAY_TOKEN="\n${AUTH_TOKEN}\n"\n`
    mkdirSync(join(home, '.gemini'))
    writeFileSync(join(home, '.gemini', '.env'), env)
    const bashrc = `# mine\nexport CORP_PASSWORD="${LISTED[0]}\n${LISTED[1]}"\nalias ll="ls -l"\n`
    writeFileSync(join(home, '.bashrc'), bashrc)
    const gemini = cli('connect', 'gemini-cli', '--dry-run')
    expect(gemini.status).toBe(0)
    expectNoSecret(gemini.out)
    expect(gemini.out).toContain(' CORP_GATEWAY_TOKEN="cor…6789\n \n "\n+GOOGLE_GEMINI_BASE_URL=')
    const sdk = cli('connect', 'sdk', '--dry-run')
    expect(sdk.status).toBe(0)
    expectNoSecret(sdk.out)
    expect(sdk.out).toContain(' export CORP_PASSWORD="tok…dddd\n "\n alias ll="ls -l"\n')
    for (const a of ['gemini-cli', 'sdk']) expect(cli('connect', a).status).toBe(0)
    expect(readFileSync(join(home, '.gemini', '.env'), 'utf8')).toContain(env)
    expect(readFileSync(join(home, '.bashrc'), 'utf8')).toContain(bashrc)
  })
})
