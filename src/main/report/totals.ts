import type { ReportRow } from './types'

export type Totals = Omit<ReportRow, 'key' | 'models' | 'provider' | 'agent' | 'project'>

/** What a report's totals are summed from: one SQL group's sums. */
export type TotalsPart = Partial<Totals> & { requests: number; cost_usd: number }

export function noTotals(): Totals {
  return { requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, imported: 0, unpriced_requests: 0 }
}

/**
 * The totals of a report from its parts (see `collect`): the counts added as they are (whole
 * numbers are exact), the money by `sumMoney`, so the same parts give the same last digit however
 * they were read or grouped into rows.
 */
export function sumTotals(parts: readonly TotalsPart[]): Totals {
  const t = noTotals()
  const money: number[] = []
  for (const p of parts) {
    t.requests += p.requests
    t.input_tokens += p.input_tokens ?? 0
    t.output_tokens += p.output_tokens ?? 0
    t.cache_read_tokens += p.cache_read_tokens ?? 0
    t.cache_write_tokens += p.cache_write_tokens ?? 0
    t.imported += p.imported ?? 0
    money.push(p.cost_usd)
  }
  t.cost_usd = sumMoney(money)
  return t
}

/**
 * The sum of amounts, which depends only on which amounts there are (not on their order): added
 * smallest magnitude first, with Neumaier's compensation (the error of each addition carried to
 * the end), so it is also as near the exact sum as doubles allow for a report's few thousand parts.
 */
export function sumMoney(amounts: readonly number[]): number {
  const sorted = [...amounts].sort((a, b) => Math.abs(a) - Math.abs(b) || a - b)
  let sum = 0
  let carry = 0
  for (const x of sorted) {
    const t = sum + x
    carry += Math.abs(sum) >= Math.abs(x) ? sum - t + x : x - t + sum
    sum = t
  }
  return sum + carry
}
