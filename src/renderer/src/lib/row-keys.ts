/**
 * Vue keys for a list's rows that no two rows share: each row's fixed parts as JSON (no text can
 * pass for another tuple, as a key joined with `|` or `:` could), and, for rows whose parts are all
 * alike (two rules on whole keys of the same hint that no key has used: the answer names them by
 * the hint alone), which of them it is, in the list's order.
 */
export function rowKeys<T>(rows: readonly T[], parts: (row: T) => readonly unknown[]): string[] {
  const seen = new Map<string, number>()
  return rows.map((r) => {
    const base = JSON.stringify(parts(r))
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    return n === 0 ? base : `${base}#${n}`
  })
}
