import { defineStore } from 'pinia'
import { computed, ref, watch } from 'vue'
import type { GroupBy, Range } from '../../../shared/api'
import { parseViewState, serializeViewState } from '../lib/url-state'

/** Range, grouping and tenant: applied to every view, mirrored in the URL (bookmarkable, shareable). */
export const useFilters = defineStore('filters', () => {
  const initial = parseViewState(window.location.search)
  const range = ref<Range>(initial.range)
  const group = ref<GroupBy>(initial.group)
  const tenant = ref(initial.tenant)
  /** On a team server: one member's calls in the breakdown (and its export); '' for all. */
  const member = ref(initial.member ?? '')

  /** Changes whenever the data to show changes; the dashboard store refetches on it. */
  const key = computed(() => `${range.value}|${group.value}|${tenant.value}|${member.value}`)

  watch(key, () => {
    const search = serializeViewState(
      { range: range.value, group: group.value, tenant: tenant.value, member: member.value },
      window.location.search,
    )
    if (search !== window.location.search) {
      window.history.replaceState(window.history.state, '', `${window.location.pathname}${search}${window.location.hash}`)
    }
  })

  /** Back/forward or a pasted URL in the same tab. */
  function readUrl() {
    const s = parseViewState(window.location.search)
    range.value = s.range
    group.value = s.group
    tenant.value = s.tenant
    member.value = s.member ?? ''
  }
  window.addEventListener('popstate', readUrl)

  return {
    range,
    group,
    tenant,
    member,
    key,
    readUrl,
    setRange: (r: Range) => void (range.value = r),
    setGroup: (g: GroupBy) => void (group.value = g),
    setTenant: (t: string) => void (tenant.value = t.trim()),
    setMember: (m: string) => void (member.value = m),
  }
})
