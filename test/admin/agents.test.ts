import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import type { AgentConnection, ConnectPlan } from '../../src/shared/connect'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'

const TOKEN = 'admin-token-for-agent-tests-0123456789'
const auth = { authorization: `Bearer ${TOKEN}` }
const SETTINGS = '{\n  // mine\n  "model": "opus"\n}\n'

let dir: string
let home: string
let server: BurnrateServer
let url: string
let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream()
  dir = mkdtempSync(join(tmpdir(), 'burnrate-agents-'))
  home = join(dir, 'home')
  mkdirSync(join(home, '.claude'), { recursive: true })
  writeFileSync(join(home, '.claude', 'settings.json'), SETTINGS)
  const config = loadConfig({ dataDir: join(dir, 'data') }, {})
  config.server.port = 0
  config.admin = { enabled: true, token: TOKEN }
  config.providers.anthropic = { ...config.providers.anthropic, base_url: baseUrlFor('anthropic', upstream.url) }
  server = createBurnrate(config, { log: silentLogger, agentHome: { home, env: { PATH: '' }, platform: 'linux' } })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(1000)
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

const post = (path: string, body: unknown, headers: Record<string, string> = auth) => postJson(`${url}${path}`, body, headers)
const get = (path: string, headers: Record<string, string> = auth) => request(`${url}${path}`, { headers })

describe('admin API: agent connections', () => {
  it('needs the admin token', async () => {
    expect((await get('/api/admin/agents', {})).status).toBe(401)
    expect((await post('/api/admin/agents/claude-code/connect', {}, {})).status).toBe(401)
  })

  it('lists the agents with their settings and this server as the address', async () => {
    const res = await get('/api/admin/agents')
    expect(res.status).toBe(200)
    const body = res.json() as { url: string; agents: AgentConnection[] }
    expect(body.url).toBe(url)
    expect(body.agents.map((a) => a.agent)).toEqual(['claude-code', 'codex', 'gemini-cli', 'opencode', 'sdk'])
    expect(body.agents[0]).toMatchObject({
      name: 'Claude Code',
      installed: true,
      connected: false,
      settings: [
        { file: '~/.claude/settings.json', key: 'env.ANTHROPIC_BASE_URL', value: null },
        { file: '~/.claude/settings.json', key: 'env.ANTHROPIC_VERTEX_BASE_URL', value: null },
      ],
      last_call_at: null,
    })
  })

  it('shows the change first, applies exactly that plan, and restores the file on disconnect', async () => {
    const plan = (await get('/api/admin/agents/claude-code/plan?action=connect')).json() as ConnectPlan
    expect(plan).toMatchObject({ agent: 'claude-code', action: 'connect', url, noop: false })
    expect(plan.changes[0].settings).toEqual([
      { key: 'env.ANTHROPIC_BASE_URL', from: null, to: url },
      { key: 'env.ANTHROPIC_VERTEX_BASE_URL', from: null, to: `${url}/vertex/v1` },
    ])
    expect(plan.changes[0].diff).toContain(`+  "env": {`)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(SETTINGS)

    const res = await post('/api/admin/agents/claude-code/connect', { plan_id: plan.id })
    expect(res.status).toBe(200)
    expect(res.json().agent).toMatchObject({ connected: true, url })
    expect(JSON.parse(readFileSync(join(home, '.claude', 'settings.json'), 'utf8').replace('// mine', '')).env.ANTHROPIC_BASE_URL).toBe(url)

    // A call from Claude Code through the proxy shows as its last call.
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    await postJson(`${url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, {
      'x-api-key': 'sk-ant-agents-test',
      'anthropic-version': '2023-06-01',
      'user-agent': 'claude-cli/2.1.330 (external, cli)',
    })
    await eventually(async () => {
      const a = ((await get('/api/admin/agents')).json() as { agents: AgentConnection[] }).agents[0]
      return a.last_call_at !== null && a.last_import_at === null
    })

    const off = (await get('/api/admin/agents/claude-code/plan?action=disconnect')).json() as ConnectPlan
    expect(off.changes[0].settings).toEqual([
      { key: 'env.ANTHROPIC_BASE_URL', from: url, to: null },
      { key: 'env.ANTHROPIC_VERTEX_BASE_URL', from: `${url}/vertex/v1`, to: null },
    ])
    const res2 = await post('/api/admin/agents/claude-code/disconnect', { plan_id: off.id })
    expect(res2.status).toBe(200)
    expect(res2.json().agent.connected).toBe(false)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe(SETTINGS)
  })

  it('answers a stale plan with 409 and writes nothing', async () => {
    const plan = (await get('/api/admin/agents/codex/plan?action=connect')).json() as ConnectPlan
    mkdirSync(join(home, '.codex'), { recursive: true })
    writeFileSync(join(home, '.codex', 'config.toml'), 'model = "o3"\n')
    const res = await post('/api/admin/agents/codex/connect', { plan_id: plan.id })
    expect(res.status).toBe(409)
    expect(res.json().error).toMatchObject({ type: 'conflict', code: 'conflict' })
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe('model = "o3"\n')
  })

  it('a malformed file is a 409 naming it; bad requests are 400 and 404', async () => {
    mkdirSync(join(home, '.config', 'opencode'), { recursive: true })
    writeFileSync(join(home, '.config', 'opencode', 'opencode.json'), '{ "provider": ')
    const res = await post('/api/admin/agents/opencode/connect', {})
    expect(res.status).toBe(409)
    expect(res.json().error).toMatchObject({ code: 'malformed', file: join(home, '.config', 'opencode', 'opencode.json') })
    expect(res.json().error.message).toContain('~/.config/opencode/opencode.json is not valid JSON')

    expect((await post('/api/admin/agents/vim/connect', {})).status).toBe(404)
    expect((await get('/api/admin/agents/codex/plan?action=explode')).json().error.param).toBe('action')
    expect((await post('/api/admin/agents/codex/connect', { plan: 'x' })).json().error.param).toBe('plan')
  })

  it("Codex on its active profile's model provider: connected, with a warning in the plan's notes and the agent's warnings", async () => {
    const mine = 'profile = "work"\n\n[model_providers.azure]\nname = "Azure"\nbase_url = "https://me.openai.azure.com/openai"\n\n[profiles.work]\nmodel_provider = "azure"\n'
    mkdirSync(join(home, '.codex'), { recursive: true })
    writeFileSync(join(home, '.codex', 'config.toml'), mine)
    const says = '~/.codex/config.toml chooses the model provider "azure" (profiles.work.model_provider = "azure", the profile "work" that profile = "work" makes active)'
    const res = await post('/api/admin/agents/codex/connect', {})
    expect(res.status).toBe(200)
    const { plan, agent } = res.json() as { plan: ConnectPlan; agent: AgentConnection }
    expect(plan.notes.filter((n) => n.startsWith(says))).toHaveLength(1)
    expect(agent).toMatchObject({ connected: true, url })
    expect(agent.warnings).toHaveLength(1)
    expect(agent.warnings[0]).toContain(says)
    expect(agent.warnings[0]).toContain(`base_url is ${url}/v1`)
    const listed = ((await get('/api/admin/agents')).json() as { agents: AgentConnection[] }).agents
    expect(listed.find((a) => a.agent === 'codex')!.warnings).toEqual(agent.warnings)
    expect(listed.find((a) => a.agent === 'claude-code')!.warnings).toEqual([])
    expect((await post('/api/admin/agents/codex/disconnect', {})).status).toBe(200)
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(mine)
  })

  it('a malformed record of the connections is a 409 naming it on the list too, as on a plan', async () => {
    const state = join(dir, 'data', 'agent-connections.json')
    let saved: string | null = null
    try {
      saved = readFileSync(state, 'utf8')
    } catch {}
    writeFileSync(state, '{bad')
    try {
      for (const path of ['/api/admin/agents', '/api/admin/agents/claude-code/plan']) {
        const res = await get(path)
        expect(res.status).toBe(409)
        expect(res.json().error).toMatchObject({ type: 'conflict', code: 'malformed', file: state })
        expect(res.json().error.message).toContain('is not valid JSON')
      }
    } finally {
      if (saved === null) rmSync(state)
      else writeFileSync(state, saved)
    }
  })
})
