import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { createLogger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import type { ConnectPlan } from '../../src/shared/connect'
import { postJson, request } from '../support/http'

const TOKEN = 'admin-token-for-agent-secret-tests-0123'
const auth = { authorization: `Bearer ${TOKEN}` }
// A made-up key in Anthropic's shape, beside the keys Burnrate sets: never answered whole.
const KEY = 'sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-abcd'
const SETTINGS = `{\n  "env": {\n    "ANTHROPIC_API_KEY": "${KEY}"\n  }\n}\n`

let dir: string
let home: string
let server: BurnrateServer
let url: string
let logged = ''

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-agents-secrets-'))
  home = join(dir, 'home')
  mkdirSync(join(home, '.claude'), { recursive: true })
  writeFileSync(join(home, '.claude', 'settings.json'), SETTINGS)
  const config = loadConfig({ dataDir: join(dir, 'data') }, {})
  config.server.port = 0
  config.admin = { enabled: true, token: TOKEN }
  server = createBurnrate(config, { log: createLogger('debug', (l) => (logged += l)), agentHome: { home, env: { PATH: '' }, platform: 'linux' } })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(1000)
  rmSync(dir, { recursive: true, force: true })
})

const get = (path: string) => request(`${url}${path}`, { headers: auth })
const post = (path: string, body: unknown) => postJson(`${url}${path}`, body, auth)

describe('admin API: a plan hides the keys in the files it shows', () => {
  it("the connect and disconnect plans' diffs name the key and hint its value; the file keeps it whole", async () => {
    const res = await get('/api/admin/agents/claude-code/plan?action=connect')
    expect(res.status).toBe(200)
    expect(res.text).not.toContain(KEY)
    const plan = res.json() as ConnectPlan
    expect(plan.changes[0].diff).toContain(' "ANTHROPIC_API_KEY": "sk-…abcd",')
    expect(plan.changes[0].diff).toContain(`+    "ANTHROPIC_BASE_URL": "${url}",`)

    const on = await post('/api/admin/agents/claude-code/connect', { plan_id: plan.id })
    expect(on.status).toBe(200)
    expect(on.text).not.toContain(KEY)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toContain(`"ANTHROPIC_API_KEY": "${KEY}"`)
    expect((await get('/api/admin/agents')).text).not.toContain(KEY)

    const off = await get('/api/admin/agents/claude-code/plan?action=disconnect')
    expect(off.text).not.toContain(KEY)
    expect((off.json() as ConnectPlan).changes[0].diff).toContain(' "ANTHROPIC_API_KEY": "sk-…abcd"')
    const done = await post('/api/admin/agents/claude-code/disconnect', { plan_id: (off.json() as ConnectPlan).id })
    expect(done.status).toBe(200)
    expect(done.text).not.toContain(KEY)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(SETTINGS)
    expect(logged).not.toContain(KEY)
  })
  it("the list shows the value of a setting Burnrate owns, set by hand to an address with a password, without the password", async () => {
    writeFileSync(join(home, '.claude', 'settings.json'), '{\n  "env": {\n    "ANTHROPIC_BASE_URL": "https://me:hunter2-correct-horse@gw.corp.example"\n  }\n}\n')
    const res = await get('/api/admin/agents')
    expect(res.status).toBe(200)
    expect(res.text).not.toContain('hunter2-correct-horse')
    const claude = (res.json() as { agents: { agent: string; settings: { key: string; value: string | null }[] }[] }).agents.find((a) => a.agent === 'claude-code')!
    expect(claude.settings.find((s) => s.key === 'env.ANTHROPIC_BASE_URL')!.value).toBe('https://me:hun…orse@gw.corp.example')
    const plan = await get('/api/admin/agents/claude-code/plan?action=connect')
    expect(plan.text).not.toContain('hunter2-correct-horse')
    expect((plan.json() as ConnectPlan).changes[0].settings[0]).toEqual({ key: 'env.ANTHROPIC_BASE_URL', from: 'https://me:hun…orse@gw.corp.example', to: url })
    writeFileSync(join(home, '.claude', 'settings.json'), SETTINGS)
  })

  it("Codex's plan: a bearer token in a TOML multi-line string, on a line of its own, is hinted by the key it sits under", async () => {
    const token = 'corp-gw-4f1d9a7c2b'
    const toml = `model = "o3"\nexperimental_bearer_token = """\n${token}\n"""\n`
    mkdirSync(join(home, '.codex'), { recursive: true })
    writeFileSync(join(home, '.codex', 'config.toml'), toml)
    const res = await get('/api/admin/agents/codex/plan?action=connect')
    expect(res.status).toBe(200)
    expect(res.text).not.toContain(token)
    expect((res.json() as ConnectPlan).changes[0].diff).toContain(' experimental_bearer_token = """\n cor…7c2b\n """\n')
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(toml)
  })
})
