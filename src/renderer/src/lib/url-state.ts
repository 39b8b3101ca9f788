import { GROUP_BYS, RANGES, type GroupBy, type Range } from '../../../shared/api'

/** The view state that lives in the URL, so a view can be bookmarked and shared. */
export interface ViewState {
  range: Range
  group: GroupBy
  tenant: string
  /** A team server's member whose calls the breakdown shows ('' for every call). */
  member?: string
}

export const DEFAULT_STATE: ViewState = { range: '24h', group: 'model', tenant: '' }

/** Reads `?range=7d&group=agent&tenant=acme`; unknown or bad values fall back to the defaults. */
export function parseViewState(search: string): ViewState {
  const q = new URLSearchParams(search)
  const range = q.get('range')
  const group = q.get('group')
  return {
    range: RANGES.includes(range as Range) ? (range as Range) : DEFAULT_STATE.range,
    group: GROUP_BYS.includes(group as GroupBy) ? (group as GroupBy) : DEFAULT_STATE.group,
    tenant: (q.get('tenant') ?? '').trim(),
    ...(q.get('member') ? { member: q.get('member')! } : {}),
  }
}

/** The query string for a state (defaults left out, other parameters kept), with its `?`, or ''. */
export function serializeViewState(state: ViewState, search = ''): string {
  const q = new URLSearchParams(search)
  const set = (k: string, v: string, dflt: string) => (v && v !== dflt ? q.set(k, v) : q.delete(k))
  set('range', state.range, DEFAULT_STATE.range)
  set('group', state.group, DEFAULT_STATE.group)
  set('tenant', state.tenant.trim(), '')
  set('member', state.member ?? '', '')
  const s = q.toString()
  return s ? `?${s}` : ''
}
