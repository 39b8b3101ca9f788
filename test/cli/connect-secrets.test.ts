import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'

// Made-up keys in the providers' shapes; each must never be printed whole.
const ANTHROPIC = 'sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-abcd'
const OPENAI = 'sk-proj-Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9P0ZaXsCdVfBg-wxyz'
const GEMINI = 'AIzaSyD-Fake9Key8For7Tests6Only5Xy4Zq3'
const XAI = 'xai-Fake1234567890abcdefghijKLMNOPqrstu9876'
const BEARER = 'corp-gw-4f1d9a7c2b8e6d30aa51ce77b91f0e2d'
const PASSWORD = 'hunter2-correct-horse-battery'
const SECRETS = [ANTHROPIC, OPENAI, GEMINI, XAI, BEARER, PASSWORD]

const CLAUDE = `{
  "model": "opus",
  "env": {
    "ANTHROPIC_API_KEY": "${ANTHROPIC}",
    "ANTHROPIC_CUSTOM_HEADERS": "Authorization: Bearer ${BEARER}",
    "MAX_THINKING_TOKENS": "8000"
  }
}
`
const CODEX = `model = "o3"
experimental_bearer_token = "${OPENAI}"

[model_providers.corp]
name = "Corp"
env_key = "CORP_API_KEY"
http_headers = { "Authorization" = "Bearer ${BEARER}" }
`
const GEMINI_ENV = `GEMINI_API_KEY=${GEMINI}
XAI_KEY='${XAI}'
`
const OPENCODE = `{
  "provider": {
    "anthropic": {
      "options": {
        "apiKey": "${ANTHROPIC}"
      }
    }
  }
}
`
const BASHRC = `# mine
export OPENAI_API_KEY=${OPENAI}
export DB_PASSWORD="${PASSWORD}"
alias ll='ls -l'
`

let home: string
let saved: NodeJS.ProcessEnv
let out: string
let err: string

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-cli-secrets-'))
  saved = { ...process.env }
  process.env.HOME = home
  process.env.BURNRATE_DATA_DIR = join(home, 'data')
  process.env.BURNRATE_PORT = '8792'
  process.env.SHELL = '/bin/bash'
  for (const k of ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'XDG_CONFIG_HOME', 'GEMINI_CLI_HOME', 'ZDOTDIR']) delete process.env[k]
  for (const k of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY', 'no_proxy']) delete process.env[k]
  for (const k of ['GOOGLE_GEMINI_BASE_URL', 'CODE_ASSIST_ENDPOINT', 'GOOGLE_VERTEX_BASE_URL', 'OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL']) delete process.env[k]
  mkdirSync(join(home, '.claude'))
  writeFileSync(join(home, '.claude', 'settings.json'), CLAUDE)
  mkdirSync(join(home, '.codex'))
  writeFileSync(join(home, '.codex', 'config.toml'), CODEX)
  mkdirSync(join(home, '.gemini'))
  writeFileSync(join(home, '.gemini', '.env'), GEMINI_ENV)
  mkdirSync(join(home, '.config', 'opencode'), { recursive: true })
  writeFileSync(join(home, '.config', 'opencode', 'opencode.json'), OPENCODE)
  writeFileSync(join(home, '.bashrc'), BASHRC)
})
afterEach(() => {
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

/** What was printed holds none of the keys, nor a long piece of one. */
function expectNoSecret(text: string): void {
  for (const s of SECRETS) {
    expect(text).not.toContain(s)
    expect(text).not.toContain(s.slice(4, 20))
  }
}

const AGENTS = ['claude-code', 'codex', 'gemini-cli', 'opencode', 'sdk']

describe('burnrate connect: the plans it prints hide the keys in the files it shows', () => {
  it('--dry-run, connect and disconnect --dry-run: every diff line names the key and hints its value, as the ledger does', async () => {
    for (const a of AGENTS) {
      expect(await cli('connect', a, '--dry-run')).toBe(0)
      expect(out).toContain('dry run: nothing written')
      expectNoSecret(out + err)
    }
    expect(await cli('connect', 'claude-code', '--dry-run')).toBe(0)
    expect(out).toContain(' "ANTHROPIC_API_KEY": "sk-…abcd",')
    expect(out).toContain(' "ANTHROPIC_CUSTOM_HEADERS": "Authorization: Bearer cor…0e2d",')
    // A number of tokens is no secret: shown as it is.
    expect(out).toContain(' "MAX_THINKING_TOKENS": "8000"')
    expect(out).toContain('+    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8792"')
    expect(await cli('connect', 'codex', '--dry-run')).toBe(0)
    expect(out).toContain(' experimental_bearer_token = "sk-…wxyz"')
    expect(await cli('connect', 'gemini-cli', '--dry-run')).toBe(0)
    expect(out).toContain(' GEMINI_API_KEY=AIz…4Zq3')
    expect(out).toContain(" XAI_KEY='xai…9876'")
    expect(await cli('connect', 'opencode', '--dry-run')).toBe(0)
    expect(out).toContain(' "apiKey": "sk-…abcd",')
    expect(await cli('connect', 'sdk', '--dry-run')).toBe(0)
    expect(out).toContain(' export OPENAI_API_KEY=sk-…wxyz')
    expect(out).toContain(' export DB_PASSWORD="hun…tery"')
    expect(out).toContain(" alias ll='ls -l'")

    // Written, the files keep their keys whole; the plans printed and the disconnect's do not show them.
    for (const a of AGENTS) {
      expect(await cli('connect', a)).toBe(0)
      expectNoSecret(out + err)
    }
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toContain(ANTHROPIC)
    expect(readFileSync(join(home, '.bashrc'), 'utf8')).toContain(OPENAI)
    expect(await cli('connect')).toBe(0)
    expectNoSecret(out + err)
    for (const a of AGENTS) {
      expect(await cli('disconnect', a, '--dry-run')).toBe(0)
      expectNoSecret(out + err)
    }
    expect(await cli('disconnect', '--all')).toBe(0)
    expectNoSecret(out + err)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(CLAUDE)
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)
    expect(readFileSync(join(home, '.gemini', '.env'), 'utf8')).toBe(GEMINI_ENV)
    expect(readFileSync(join(home, '.config', 'opencode', 'opencode.json'), 'utf8')).toBe(OPENCODE)
    expect(readFileSync(join(home, '.bashrc'), 'utf8')).toBe(BASHRC)
  })
})

describe('burnrate connect: a file refused says where, without its secrets', () => {
  it("a key that must go in an object holding a key (\"env\": \"ANTHROPIC_API_KEY=…\") is refused, the value hinted in the message", async () => {
    const mine = `{\n  "env": "ANTHROPIC_API_KEY=${ANTHROPIC}"\n}\n`
    writeFileSync(join(home, '.claude', 'settings.json'), mine)
    expect(await cli('connect', 'claude-code', '--dry-run')).toBe(1)
    expect(err).toContain('~/.claude/settings.json has env = ANTHROPIC_API_KEY=sk-…abcd, where env.ANTHROPIC_BASE_URL must go in an object')
    expectNoSecret(out + err)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(mine)
  })
})
