import { computed, ref, type Ref } from 'vue'

export type SortDir = 'asc' | 'desc'

/**
 * Sorting state for a table: click a column to sort by it, click again to flip. Text sorts A→Z
 * first, numbers high→low. A row marked `other` (the server's sum of the groups past its limit)
 * stays last whatever the sort: it is no group, and its sum often tops every group's.
 */
const isOther = (row: unknown): boolean => (row as { other?: boolean } | null)?.other === true

/**
 * `text`: what a column shows for a row, where that is not the value itself (a provider's name
 * for its id, a placeholder for an empty value): text columns sort by what the user reads.
 */
export function useSort<T, K extends keyof T & string>(rows: Ref<T[]>, initial: K, initialDir: SortDir = 'desc', text?: (row: T, key: K) => string | undefined) {
  const key = ref(initial) as Ref<K>
  const dir = ref<SortDir>(initialDir)
  const sorted = computed(() => {
    const k = key.value
    const sign = dir.value === 'asc' ? 1 : -1
    return [...rows.value].sort((a, b) => {
      const folded = Number(isOther(a)) - Number(isOther(b))
      if (folded !== 0) return folded
      const x = a[k] as unknown
      const y = b[k] as unknown
      if (typeof x === 'number' && typeof y === 'number') return (x - y) * sign
      return (text?.(a, k) ?? String(x ?? '')).localeCompare(text?.(b, k) ?? String(y ?? '')) * sign
    })
  })
  function sortBy(k: K) {
    if (key.value === k) dir.value = dir.value === 'asc' ? 'desc' : 'asc'
    else {
      key.value = k
      dir.value = typeof rows.value[0]?.[k] === 'number' ? 'desc' : 'asc'
    }
  }
  function ariaSort(k: K): 'ascending' | 'descending' | 'none' {
    return key.value === k ? (dir.value === 'asc' ? 'ascending' : 'descending') : 'none'
  }
  return { key, dir, sorted, sortBy, ariaSort }
}
