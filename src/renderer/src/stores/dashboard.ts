import { defineStore } from 'pinia'
import { computed, reactive, ref, watch } from 'vue'
import { type AlertsLog, type BudgetsOverview, type Costs, type Expensive, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, type Sessions, type Stats, type Summary, type Timeseries } from '../../../shared/api'
import { ApiError, UnreachableError, api } from '../api/client'
import { useFilters } from './filters'

/** How often every view refreshes on its own. */
export const POLL_MS = 5_000
/**
 * How long a section's request may wait for its answer. A round refreshes every section once all
 * of them have answered: one request never answered (a hung server, a connection dropped without
 * a word) held every later round back for good, the page showing its last figures as "Live".
 */
export const REQUEST_TIMEOUT_MS = 60_000

export interface DashboardData {
  summary: Summary | null
  timeseries: Timeseries | null
  costs: Costs | null
  providers: Costs | null
  keys: Costs | null
  /** Spend per team member (group_by=member): the member breakdown and filter show when it has more than one row. */
  members: Costs | null
  sessions: Sessions | null
  expensive: Expensive | null
  stats: Stats | null
  budgets: BudgetsOverview | null
  alerts: AlertsLog | null
}
export type Section = keyof DashboardData

const SECTIONS: Section[] = ['summary', 'timeseries', 'costs', 'providers', 'keys', 'members', 'sessions', 'expensive', 'stats', 'budgets', 'alerts']

/**
 * Everything the dashboard REST API says, for the current filters, refreshed every few seconds.
 * Data is replaced in place (never cleared while reloading) so views update without flicker;
 * answers to an older filter state are dropped. Views read it through `current()`, which hides
 * a section's data while it belongs to other filters or its last load failed.
 */
export const useDashboard = defineStore('dashboard', () => {
  const filters = useFilters()
  const data = reactive<DashboardData>({
    summary: null,
    timeseries: null,
    costs: null,
    providers: null,
    keys: null,
    members: null,
    sessions: null,
    expensive: null,
    stats: null,
    budgets: null,
    alerts: null,
  })
  /** Per section: the error of its last load, if it failed (the server answered with an error). */
  const errors = reactive<Partial<Record<Section, string>>>({})
  /** The filter key each section's data belongs to (so a view can tell stale from fresh). */
  const loadedFor = reactive<Partial<Record<Section, string>>>({})
  /**
   * The range and tenant the members list answers (it depends on nothing else): the member filter
   * keeps its list while only the grouping or the member chosen changes, never across a range or tenant.
   */
  const membersFor = ref<string | null>(null)
  /** The dashboard API wants its token (401): the server's message says how to give it. */
  const authMessage = ref('')
  /** No answer from the server at all on the last refresh. */
  const unreachable = ref(false)
  const lastUpdated = ref<number | null>(null)
  const refreshing = ref(false)

  /**
   * Whether the ledger has any call in the widest range the API gives (30 days), for the filter
   * key it was asked with: asked only while the summary shows nothing this month (see `empty`).
   */
  const history = ref<{ key: string; calls: boolean } | null>(null)

  /** Rows asked for in the long lists: the top 100 until the user asks for more (up to 1,000), until a filter they answer changes. */
  const limits = reactive({ costs: LIST_LIMIT_DEFAULT, sessions: LIST_LIMIT_DEFAULT })

  let generation = 0
  let inFlight: Promise<void> | null = null
  let timer: ReturnType<typeof setInterval> | null = null

  function loaders(): Record<Section, () => Promise<unknown>> {
    const tenant = filters.tenant || undefined
    const range = filters.range
    return {
      summary: () => api<Summary>('/api/dashboard/summary', { params: { tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      timeseries: () => api<Timeseries>('/api/dashboard/timeseries', { params: { range, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      costs: () =>
        api<Costs>('/api/dashboard/costs', {
          params: { group_by: filters.group, range, tenant, limit: limits.costs, member: filters.member || undefined },
          timeoutMs: REQUEST_TIMEOUT_MS,
        }),
      providers: () => api<Costs>('/api/dashboard/costs', { params: { group_by: 'provider', range, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      keys: () => api<Costs>('/api/dashboard/costs', { params: { group_by: 'api_key', range, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      members: () => api<Costs>('/api/dashboard/costs', { params: { group_by: 'member', range, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      sessions: () => api<Sessions>('/api/dashboard/sessions', { params: { tenant, limit: limits.sessions }, timeoutMs: REQUEST_TIMEOUT_MS }),
      expensive: () => api<Expensive>('/api/dashboard/expensive', { params: { range, limit: 10, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      stats: () => api<Stats>('/api/dashboard/stats', { params: { range, tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      budgets: () => api<BudgetsOverview>('/api/dashboard/budgets', { params: { tenant }, timeoutMs: REQUEST_TIMEOUT_MS }),
      alerts: () => api<AlertsLog>('/api/dashboard/alerts', { timeoutMs: REQUEST_TIMEOUT_MS }),
    }
  }

  /** Loads every section once; concurrent calls for the same filters share one round. */
  function refresh(): Promise<void> {
    if (inFlight) return inFlight
    const gen = generation
    const key = filters.key
    const scope = membersScope()
    const load = loaders()
    refreshing.value = true
    const round: Promise<void> = (async () => {
      const results = await Promise.allSettled(SECTIONS.map((s) => load[s]()))
      if (gen !== generation) return
      let down = results.length > 0
      let auth = ''
      const unanswered: [Section, string][] = []
      results.forEach((r, i) => {
        const s = SECTIONS[i]
        if (r.status === 'fulfilled') {
          down = false
          ;(data as Record<Section, unknown>)[s] = r.value
          loadedFor[s] = key
          if (s === 'members') membersFor.value = scope
          delete errors[s]
        } else if (r.reason instanceof UnreachableError) {
          // No section answered: the last data stays on screen, and the banner says the server is
          // unreachable. Otherwise only this one failed (below).
          unanswered.push([s, r.reason.message])
        } else if (r.reason instanceof ApiError && r.reason.status === 401) {
          // The dashboard session is gone (Burnrate restarted, say): nothing can be loaded until
          // the token is given again, so the figures on screen are no longer current. The view
          // gives way to its placeholder; the page's note (once, not per view) says why.
          down = false
          auth = r.reason.message
          delete loadedFor[s]
          if (s === 'members') membersFor.value = null
        } else {
          down = false
          errors[s] = r.reason instanceof ApiError ? r.reason.message : String((r.reason as Error)?.message ?? r.reason)
          loadedFor[s] = key
        }
      })
      // The server answered the others: this section's failed load is its own error, shown in its
      // view in place of its last figures, which the others' new ones would contradict unsaid.
      if (!down) {
        for (const [s, message] of unanswered) {
          errors[s] = message
          loadedFor[s] = key
        }
      }
      // Nothing this month by the summary: ask whether any call is in the last 30 days (the
      // contract has no "any call ever"; this also counts last month's calls, plan calls and
      // unpriced ones, each a row of its own), before telling the user nothing was metered.
      if (data.summary && loadedFor.summary === key && errors.summary === undefined && nothingThisMonth(data.summary)) {
        try {
          const c = await api<Costs>('/api/dashboard/costs', {
            params: { group_by: 'provider', range: '30d', limit: 1, tenant: filters.tenant || undefined },
            timeoutMs: REQUEST_TIMEOUT_MS,
          })
          if (gen !== generation) return
          history.value = { key, calls: c.rows.length > 0 || (c.total_rows ?? 0) > 0 }
        } catch {
          if (gen !== generation) return
          history.value = null
        }
      }
      unreachable.value = down
      authMessage.value = auth
      // "Live · updated …" only after a round the server answered with figures (or their errors).
      if (!down && !auth) lastUpdated.value = Date.now()
    })().finally(() => {
      if (inFlight === round) {
        inFlight = null
        refreshing.value = false
      }
    })
    inFlight = round
    return round
  }

  // New filters: forget answers to the old ones and load at once. A list asked longer starts again
  // at its first 100 rows when a filter it answers changes (the breakdown answers every filter; the
  // sessions only the tenant): the 1,000 rows were asked of the old filters, not of these.
  watch(
    [() => filters.key, () => filters.tenant],
    ([, tenant], [, before]) => {
      limits.costs = LIST_LIMIT_DEFAULT
      if (tenant !== before) limits.sessions = LIST_LIMIT_DEFAULT
      generation++
      inFlight = null
      void refresh()
    },
  )

  const onVisible = () => {
    if (document.visibilityState === 'visible') void refresh()
  }

  function start(intervalMs = POLL_MS) {
    stop()
    void refresh()
    timer = setInterval(() => {
      if (document.visibilityState !== 'hidden') void refresh()
    }, intervalMs)
    document.addEventListener('visibilitychange', onVisible)
  }

  function stop() {
    if (timer) clearInterval(timer)
    timer = null
    document.removeEventListener('visibilitychange', onVisible)
  }

  /** True once a section has an answer (data or error) for the current filters. */
  const isLoaded = (s: Section) => loadedFor[s] === filters.key
  /**
   * A section's data only when it answers the current filters and its last load did not fail;
   * otherwise null, so a view shows a placeholder (and the error) rather than the last filters'
   * figures, or figures a failed refresh left behind, as if they were current.
   */
  function current<S extends Section>(s: S): DashboardData[S] | null {
    return isLoaded(s) && errors[s] === undefined ? data[s] : null
  }
  /**
   * The error of a section's last load when that load was for the current filters; otherwise
   * undefined (the view shows its loading state), never another tenant's or range's failure said
   * under these filters while their answer is on its way.
   */
  function errorOf(s: Section): string | undefined {
    return isLoaded(s) ? errors[s] : undefined
  }
  /**
   * The members list for the range and tenant in force, or null (not loaded for them yet, or its
   * last load failed): never another tenant's members, offered as if they sent this one's calls.
   */
  function currentMembers(): Costs | null {
    return membersFor.value === membersScope() && errors.members === undefined ? data.members : null
  }
  function membersScope(): string {
    return JSON.stringify([filters.range, filters.tenant])
  }
  /** True before the first answer of all: show skeletons rather than zeros. */
  const firstLoad = computed(() => lastUpdated.value === null && !unreachable.value)
  /**
   * No call metered (for the tenant chosen), as far as the API can tell: nothing this month (no
   * spend, no plan usage, no request today), nothing in the range or the sessions, and no call in
   * the last 30 days (which covers last month's calls early in a month, plan calls and unpriced
   * ones). Then the getting-started panel shows; while the summary or that look-up is unknown, it
   * does not. The range's rows and the sessions are read for the filters in force only (never the
   * last tenant's, which kept the panel hidden over a tenant with no call when its breakdown load
   * failed); one that failed adds nothing the 30-day look-up does not cover (every range is 30 days
   * at most, the sessions 24 h).
   */
  const empty = computed(
    () =>
      current('summary') !== null &&
      nothingThisMonth(data.summary!) &&
      (current('costs')?.rows.length ?? 0) === 0 &&
      (current('sessions')?.sessions.length ?? 0) === 0 &&
      history.value !== null &&
      history.value.key === filters.key &&
      !history.value.calls,
  )

  /**
   * Loads every section anew after something changed that they show (a budget rule saved or
   * deleted from the page, past calls re-priced, a list asked longer): a round already on its way may have been
   * answered before the change, so this one starts after it, not waiting for the next refresh.
   */
  function reload(): Promise<void> {
    return (inFlight ?? Promise.resolve()).then(() => refresh())
  }

  /** Asks for the longest list the server gives (1,000 rows) in `section`, and loads it now. */
  function showMore(section: 'costs' | 'sessions'): Promise<void> {
    limits[section] = LIST_LIMIT_MAX
    return reload()
  }

  return { data, errors, authMessage, unreachable, lastUpdated, refreshing, firstLoad, empty, isLoaded, current, errorOf, currentMembers, refresh, reload, start, stop, limits, showMore }
})

/** The summary shows no call this month: no spend, no plan usage, no request today. */
function nothingThisMonth(s: Summary): boolean {
  return s.month_spend_usd === 0 && s.month_plan_value_usd === 0 && s.today_plan_value_usd === 0 && s.today_spend_usd === 0 && s.today_requests === 0
}
