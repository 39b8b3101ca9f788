import { defineStore } from 'pinia'
import { ref } from 'vue'
import type { ApiKeyUsage, BudgetRule, BudgetRuleInput } from '../../../shared/api'
import { ApiError, UnreachableError, api } from '../api/client'
import { useDashboard } from './dashboard'

/** Kept for this browser tab's session only, never in localStorage or a cookie. */
export const TOKEN_KEY = 'burnrate.adminToken'

/**
 * - `unknown`: not asked yet; `disabled`: the server has no admin API (404);
 * - `locked`: the admin API exists and no token was given; `wrong_token`: the token was refused (401);
 * - `ready`: rules and keys are loaded (a later refresh that failed for another reason keeps it, with `message`);
 * - `error`: the first load with a token failed for another reason (see `message`); retried on the next refresh.
 */
export type AdminStatus = 'unknown' | 'disabled' | 'locked' | 'wrong_token' | 'ready' | 'error'

export const DISABLED_MESSAGE =
  'The admin API is disabled on this server. Set admin.enabled: true and an admin.token in the config file, then restart Burnrate.'
export const WRONG_TOKEN_MESSAGE = 'That admin token was refused. Check admin.token in the config file and enter it again.'

/** The admin API (budget rules, API keys), behind the admin token. */
export const useAdmin = defineStore('admin', () => {
  const token = ref(readToken())
  const status = ref<AdminStatus>('unknown')
  const message = ref('')
  const rules = ref<BudgetRule[]>([])
  const keys = ref<ApiKeyUsage[]>([])
  /** The newest load has not answered yet (a refresh then does not ask again). */
  const loading = ref(false)
  let generation = 0

  function classify(err: unknown): void {
    if (err instanceof ApiError && err.status === 404 && err.type === 'not_found') {
      status.value = 'disabled'
      message.value = DISABLED_MESSAGE
    } else if (err instanceof ApiError && err.status === 401) {
      status.value = token.value ? 'wrong_token' : 'locked'
      message.value = token.value ? WRONG_TOKEN_MESSAGE : ''
    } else if (err instanceof UnreachableError) {
      // Leave the current state; the dashboard's banner says the server is unreachable.
    } else {
      // Anything else (a 503 while the server is at max_connections, a 500) is passing: an
      // unlocked panel stays unlocked with its last rules and keys and says what failed; the
      // next refresh tries again (App.vue). Only a 401 asks for the token again.
      if (status.value !== 'ready') status.value = 'error'
      message.value = (err as Error)?.message ?? String(err)
    }
  }

  /**
   * Without a token, asks once whether the admin API exists (404: disabled; 401: it wants a token).
   * With one, loads rules and keys.
   */
  async function load(): Promise<void> {
    // Only the newest load's answer counts: one on its way when the token changed (Lock, another
    // token) or a newer load began must not put its rules, keys or status back.
    const gen = ++generation
    loading.value = true
    try {
      if (!token.value) {
        await api('/api/admin/budgets/rules')
        if (gen !== generation) return
        // A server that lists rules without a token would break the contract; treat it as locked anyway.
        status.value = 'locked'
        return
      }
      const [r, k] = await Promise.all([
        api<BudgetRule[]>('/api/admin/budgets/rules', { token: token.value }),
        api<ApiKeyUsage[]>('/api/admin/api-keys', { token: token.value }),
      ])
      if (gen !== generation) return
      rules.value = r
      keys.value = k
      status.value = 'ready'
      message.value = ''
    } catch (err) {
      if (gen === generation) classify(err)
    } finally {
      if (gen === generation) loading.value = false
    }
  }

  async function signIn(t: string): Promise<void> {
    token.value = t.trim()
    if (token.value) sessionStorage.setItem(TOKEN_KEY, token.value)
    else sessionStorage.removeItem(TOKEN_KEY)
    await load()
  }

  function signOut(): void {
    generation++
    loading.value = false
    token.value = ''
    sessionStorage.removeItem(TOKEN_KEY)
    rules.value = []
    keys.value = []
    status.value = 'locked'
    message.value = ''
  }

  /**
   * A rule was saved or deleted: the dashboard's budget figures (Budgets and forecast, the alerts,
   * each rule's bars) are loaded again now, not at the next refresh seconds later, so a raised or
   * removed limit never goes on reading "blocked" as if the change had not taken.
   */
  function changed(): void {
    void useDashboard().reload()
  }

  /** Creates (or replaces) a runtime rule. Resolves to null, or the server's message naming what is wrong. */
  async function createRule(input: BudgetRuleInput): Promise<string | null> {
    try {
      await api<BudgetRule>('/api/admin/budgets/rules', { method: 'POST', body: input, token: token.value })
      changed()
      await load()
      return null
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 404)) classify(err)
      return errorText(err)
    }
  }

  /** Deletes a runtime rule. Resolves to null, or the server's message (a config rule gets a 409 saying to edit the file). */
  async function deleteRule(pattern: string): Promise<string | null> {
    try {
      await api<null>('/api/admin/budgets/rules', { method: 'DELETE', params: { pattern }, token: token.value })
      changed()
      await load()
      return null
    } catch (err) {
      // A 404 here means "no runtime rule with that pattern", not "admin API disabled".
      if (err instanceof ApiError && err.status === 401) classify(err)
      return errorText(err)
    }
  }

  return { token, status, message, rules, keys, loading, load, signIn, signOut, createRule, deleteRule }
})

function errorText(err: unknown): string {
  return (err as Error)?.message ?? String(err)
}

function readToken(): string {
  try {
    // The desktop app hands its window the admin token in the address's fragment (never sent to the server).
    const m = /(?:^#|&)admin_token=([^&]+)/.exec(location.hash)
    if (m) {
      const t = decodeURIComponent(m[1])
      sessionStorage.setItem(TOKEN_KEY, t)
      history.replaceState(history.state, '', location.pathname + location.search)
      return t
    }
    return sessionStorage.getItem(TOKEN_KEY) ?? ''
  } catch {
    return ''
  }
}
