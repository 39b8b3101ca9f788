import { defineStore } from 'pinia'
import { ref } from 'vue'
import type { AgentConnection, ConnectPlan } from '../../../shared/connect'
import { ApiError, api } from '../api/client'
import { useAdmin } from './admin'

/** Agent connections through the admin API (`/api/admin/agents*`): list, plan, then apply exactly that plan. */
export const useAgents = defineStore('agents', () => {
  const admin = useAdmin()
  const agents = ref<AgentConnection[]>([])
  const url = ref('')
  const error = ref('')
  /** The plan being shown for confirmation. */
  const plan = ref<ConnectPlan | null>(null)
  const busy = ref(false)

  // Only the newest load's answer counts; a timer's refresh waits for it (see poll).
  let generation = 0
  let loading = false

  async function load(): Promise<void> {
    if (!admin.token) return
    const gen = ++generation
    loading = true
    try {
      const body = await api<{ url: string; agents: AgentConnection[] }>('/api/admin/agents', { token: admin.token })
      if (gen !== generation) return
      agents.value = body.agents
      url.value = body.url
      error.value = ''
    } catch (err) {
      if (gen === generation) error.value = (err as Error).message
    } finally {
      if (gen === generation) loading = false
    }
  }

  /** A timer's refresh: not while the newest load is on its way (a slow server would get one more request every time). */
  function poll(): void {
    if (!loading) void load()
  }

  // Only the newest preview's answer is shown; Cancel drops one still on its way.
  let asked = 0

  /** Asks the server what connecting or disconnecting would change, to show it first. */
  async function preview(agent: string, action: 'connect' | 'disconnect'): Promise<void> {
    const ask = ++asked
    error.value = ''
    try {
      const answer = await api<ConnectPlan>(`/api/admin/agents/${encodeURIComponent(agent)}/plan`, { params: { action }, token: admin.token })
      if (ask === asked) plan.value = answer
    } catch (err) {
      if (ask === asked) error.value = (err as Error).message
    }
  }

  /** Applies the plan shown; a 409 (the files changed since) shows the new plan instead. */
  async function confirm(): Promise<void> {
    const p = plan.value
    if (!p) return
    busy.value = true
    try {
      await api(`/api/admin/agents/${encodeURIComponent(p.agent)}/${p.action}`, { method: 'POST', body: { plan_id: p.id }, token: admin.token })
      plan.value = null
      await load()
    } catch (err) {
      error.value = (err as Error).message
      if (err instanceof ApiError && err.status === 409 && (err.body as { error?: { code?: string } })?.error?.code === 'conflict') await preview(p.agent, p.action)
    } finally {
      busy.value = false
    }
  }

  function cancel(): void {
    asked++
    plan.value = null
  }

  return { agents, url, error, plan, busy, load, poll, preview, confirm, cancel }
})
