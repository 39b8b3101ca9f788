// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import type { AgentConnection, ConnectPlan } from '../../../shared/connect'
import { TOKEN_KEY, useAdmin } from '../stores/admin'
import { useAgents } from '../stores/agents'
import { err, fakeServer, flush } from '../testing/fake-server'
import AgentSwitches from './AgentSwitches.vue'

const URL = 'http://127.0.0.1:8787'
function agent(over: Partial<AgentConnection> = {}): AgentConnection {
  return {
    agent: 'claude-code',
    name: 'Claude Code',
    installed: true,
    unsupported: null,
    connected: false,
    url: null,
    changed_since: false,
    settings: [{ file: '~/.claude/settings.json', key: 'env.ANTHROPIC_BASE_URL', value: null }],
    error: null,
    note: '',
    warnings: [],
    last_call_at: null,
    last_import_at: null,
    ...over,
  }
}
const PLAN: ConnectPlan = {
  id: 'plan-1',
  agent: 'claude-code',
  action: 'connect',
  url: URL,
  noop: false,
  notes: [],
  changes: [{ file: '~/.claude/settings.json', create: false, remove: false, diff: '+  "env": { "ANTHROPIC_BASE_URL": "http://127.0.0.1:8787" }', settings: [] }],
}

beforeEach(() => {
  sessionStorage.clear()
  setActivePinia(createPinia())
})
afterEach(() => {
  vi.unstubAllGlobals()
})

async function ready(routes: Parameters<typeof fakeServer>[0]) {
  sessionStorage.setItem(TOKEN_KEY, 'tok')
  setActivePinia(createPinia())
  const server = fakeServer({ 'GET /api/admin/budgets/rules': () => ({ body: [] }), 'GET /api/admin/api-keys': () => ({ body: [] }), ...routes })
  await useAdmin().load()
  const w = mount(AgentSwitches)
  await flush()
  await nextTick()
  return { w, server }
}

describe('AgentSwitches', () => {
  it('without the admin token, says where else agents can be connected', async () => {
    fakeServer({})
    const w = mount(AgentSwitches)
    await flush()
    expect(w.get('[data-testid="agents-locked"]').text()).toContain('burnrate connect')
  })

  it('shows the change before connecting, then applies exactly that plan', async () => {
    let connected = false
    const { w, server } = await ready({
      'GET /api/admin/agents': () => ({ body: { url: URL, agents: [agent(connected ? { connected: true, url: URL, last_call_at: new Date().toISOString() } : {})] } }),
      'GET /api/admin/agents/claude-code/plan': () => ({ body: PLAN }),
      'POST /api/admin/agents/claude-code/connect': () => {
        connected = true
        return { body: { plan: PLAN, agent: agent({ connected: true }) } }
      },
    })
    const row = w.get('[data-testid="agent-claude-code"]')
    expect(row.text()).toContain('env.ANTHROPIC_BASE_URL = (not set)')
    expect(row.text()).toContain('none yet')
    await row.get('button').trigger('click')
    await flush()
    expect(w.get('[data-testid="agent-plan"]').text()).toContain('"ANTHROPIC_BASE_URL": "http://127.0.0.1:8787"')
    expect(server.calls.some((c) => c.method === 'POST')).toBe(false)
    await w.get('[data-testid="plan-confirm"]').trigger('click')
    await flush()
    await nextTick()
    const post = server.calls.find((c) => c.method === 'POST')!
    expect(post.body).toEqual({ plan_id: 'plan-1' })
    expect(post.headers.authorization).toBe('Bearer tok')
    expect(w.find('[data-testid="agent-plan"]').exists()).toBe(false)
    expect(w.get('[data-testid="agent-claude-code"]').text()).toContain('connected')
    expect(w.get('[data-testid="agent-claude-code"]').text()).toContain('Disconnect')
  })

  it('says plainly when a connected agent\'s calls go around Burnrate (its warnings)', async () => {
    const warning = '~/.codex/config.toml chooses the model provider "azure" (model_provider = "azure"): …'
    const { w } = await ready({
      'GET /api/admin/agents': () => ({ body: { url: URL, agents: [agent({ agent: 'codex', name: 'Codex CLI', connected: true, url: URL, warnings: [warning] })] } }),
    })
    expect(w.get('[data-testid="agent-codex"] [data-testid="agent-warning"]').text()).toBe(warning)
  })

  it("shows the server's reason when a file cannot be changed", async () => {
    const { w } = await ready({
      'GET /api/admin/agents': () => ({ body: { url: URL, agents: [agent()] } }),
      'GET /api/admin/agents/claude-code/plan': () => err(409, 'conflict', '~/.claude/settings.json is not valid JSON: CommaExpected at line 3, column 1; fix it first (Burnrate wrote nothing).'),
    })
    await w.get('[data-testid="agent-claude-code"] button').trigger('click')
    await flush()
    expect(w.get('[role="alert"]').text()).toContain('is not valid JSON')
  })
  it('shows the plan of the last agent asked for, and none after Cancel, whatever order the answers come in', async () => {
    let release!: () => void
    let gate = new Promise<void>((r) => (release = r))
    const codexPlan: ConnectPlan = { ...PLAN, id: 'plan-codex', agent: 'codex', changes: [{ ...PLAN.changes[0]!, file: '~/.codex/config.toml', diff: '+openai_base_url = "http://127.0.0.1:8787/v1"' }] }
    const { w } = await ready({
      'GET /api/admin/agents': () => ({ body: { url: URL, agents: [agent(), agent({ agent: 'codex', name: 'Codex CLI' })] } }),
      'GET /api/admin/agents/claude-code/plan': async () => {
        await gate
        return { body: PLAN }
      },
      'GET /api/admin/agents/codex/plan': () => ({ body: codexPlan }),
    })
    await w.get('[data-testid="agent-claude-code"] button').trigger('click')
    await w.get('[data-testid="agent-codex"] button').trigger('click')
    await flush()
    expect(w.get('[data-testid="agent-plan"]').text()).toContain('openai_base_url')
    release()
    await flush()
    await nextTick()
    // Claude Code's plan answered last, but Codex was asked for last: its plan stays.
    expect(w.get('[data-testid="agent-plan"]').text()).toContain('openai_base_url')
    expect(w.get('[data-testid="agent-plan"]').text()).not.toContain('ANTHROPIC_BASE_URL')

    // Asked, then cancelled before the answer came: no plan appears afterwards.
    const store = useAgents()
    store.cancel()
    gate = new Promise<void>((r) => (release = r))
    const asked = store.preview('claude-code', 'connect')
    await flush()
    store.cancel()
    release()
    await asked
    await nextTick()
    expect(store.plan).toBeNull()
    expect(w.find('[data-testid="agent-plan"]').exists()).toBe(false)
  })
})

describe('the admin token handed over by the desktop app', () => {
  it('is read from the fragment once, kept for the tab, and removed from the address', () => {
    history.replaceState(null, '', '/?range=7d#admin_token=desk%2Dtok')
    setActivePinia(createPinia())
    expect(useAdmin().token).toBe('desk-tok')
    expect(sessionStorage.getItem(TOKEN_KEY)).toBe('desk-tok')
    expect(location.hash).toBe('')
    expect(location.search).toBe('?range=7d')
  })
})
