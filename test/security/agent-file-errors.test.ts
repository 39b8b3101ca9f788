import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import { postJson, request } from '../support/http'

/**
 * An agent's config file that does not parse is refused with the parser's reason, which the admin
 * API answers, the CLI prints, the Connect panel shows and the desktop app writes to its log. The
 * file may hold an API key (Codex's `experimental_bearer_token`, Claude Code's `env`): the reason
 * must never quote it, only say where the mistake is.
 */
const TOKEN = 'admin-token-for-agent-file-errors-0123'
const auth = { authorization: `Bearer ${TOKEN}` }
const KEY = 'sk-proj-UNQUOTEDsecretKEY0123456789abcdef'

let dir: string
let home: string
let server: BurnrateServer
let url: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-agent-errors-'))
  home = join(dir, 'home')
  mkdirSync(join(home, '.codex'), { recursive: true })
  const config = loadConfig({ dataDir: join(dir, 'data') }, {})
  config.server.port = 0
  config.admin = { enabled: true, token: TOKEN }
  server = createBurnrate(config, { log: silentLogger, agentHome: { home, env: { PATH: '' }, platform: 'linux' } })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(1000)
  rmSync(dir, { recursive: true, force: true })
})

describe("an agent's malformed config file holding an API key", () => {
  it.each([
    ['a key written without quotes', `model_provider = "mine"\n\n[model_providers.mine]\nbase_url = "https://llm.example/v1"\nexperimental_bearer_token = ${KEY}\n`, 'line 5, column 29'],
    ['a key that looks like a date', `[model_providers.mine]\nexperimental_bearer_token = 2024-01-01T${KEY}\n`, 'line 2, column 29'],
    ['a key where a table should open', `model = "o3"\n[[model_providers]\n${KEY} = 1\n`, 'line'],
  ])('%s: the 409 and the agent list say where, never the key', async (_what, text, where) => {
    writeFileSync(join(home, '.codex', 'config.toml'), text)
    const res = await postJson(`${url}/api/admin/agents/codex/connect`, {}, auth)
    expect(res.status).toBe(409)
    expect(res.json().error).toMatchObject({ code: 'malformed', file: join(home, '.codex', 'config.toml') })
    expect(res.json().error.message).toContain('~/.codex/config.toml is not valid TOML')
    expect(res.json().error.message).toContain(where)
    expect(res.text).not.toContain('UNQUOTEDsecretKEY')
    const plan = await request(`${url}/api/admin/agents/codex/plan`, { headers: auth })
    expect(plan.status).toBe(409)
    expect(plan.text).not.toContain('UNQUOTEDsecretKEY')
    const list = await request(`${url}/api/admin/agents`, { headers: auth })
    expect(list.status).toBe(200)
    expect(JSON.stringify(list.json().agents.find((a: { agent: string }) => a.agent === 'codex'))).toContain('not valid TOML')
    expect(list.text).not.toContain('UNQUOTEDsecretKEY')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(text)
  })
})
