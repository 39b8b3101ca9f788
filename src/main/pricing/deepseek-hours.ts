import type { ModelInfo } from '@pydantic/genai-prices'

/**
 * DeepSeek's peak hours. DeepSeek bills a model with peak hours at twice its off-peak price in
 * Beijing's 09:00-12:00 and 14:00-18:00 (01:00-04:00 and 06:00-10:00 UTC), since 2026-08-17, on
 * weekdays only: a Beijing weekend and China's statutory holidays are off-peak all day
 * (api-docs.deepseek.com/quick_start/pricing: "excluding Chinese statutory holidays").
 * The price data gives those hours as daily windows (`time_of_date` constraints), which a price
 * can tie to no date and no day of the week (its comment on deepseek-v4-flash says so): the
 * library prices a call in them at the peak price on a weekend and a holiday too, twice the bill,
 * and before 2026-08-17 too, when V4 had one flat price (0.14 instead of 0.44 per million input
 * tokens for V4 Flash).
 *
 * Which models have them is read from the price data (`hasPeakHours`), not from their names:
 * DeepSeek renames its models (deepseek-flash, with deepseek-v4-flash as a legacy name), and a
 * model the data gives these windows is billed by this rule whatever it is called. The windows of
 * deepseek-chat and deepseek-reasoner (V3's night discount, 00:30-16:30 UTC at the standard price,
 * every day) are not these and are priced as the data has them.
 *
 * `billedAt` gives such a call a time the data prices as billed: the same UTC date at 12:00 (20:00
 * in Beijing, in no peak window), whose price is that date's off-peak one, or before 2026-08-17
 * the flat one. The holidays are those the State Council has published since 2026-08-17, listed in
 * HOLIDAYS through HOLIDAYS_THROUGH; a call in the peak hours of a later year's weekday is priced at
 * the peak price, and `unlisted` names its Beijing date so it can be said (once a day) that a
 * holiday on it would be billed at half.
 */

/** DeepSeek's peak windows as the price data's `time_of_date` constraints give them (UTC). */
const PEAK_WINDOWS = ['01:00:00Z-04:00:00Z', '06:00:00Z-10:00:00Z']
/** The first date of the peak hours (the data's `start_date` for V4's off-peak price). */
const PEAK_FROM = Date.parse('2026-08-17T00:00:00Z')
/** From 2026-08-23 in Beijing, weekends are off-peak all day (the price data's comment). */
const WEEKENDS_FROM = Date.parse('2026-08-22T16:00:00Z')
const BEIJING_MS = 8 * 3600_000
/** The last year HOLIDAYS lists. */
export const HOLIDAYS_THROUGH = 2026
/** Beijing dates of China's statutory holidays from 2026-08-17 (国办发明电〔2025〕7号: Mid-Autumn, National Day). */
const HOLIDAYS = new Set(['2026-09-25', '2026-09-26', '2026-09-27', '2026-10-01', '2026-10-02', '2026-10-03', '2026-10-04', '2026-10-05', '2026-10-06', '2026-10-07'])

/** True when the model's prices have DeepSeek's daily peak windows, and no others. */
export function hasPeakHours(table: ModelInfo): boolean {
  if (!Array.isArray(table.prices)) return false
  const windows: string[] = []
  for (const p of table.prices) if (p.constraint?.type === 'time_of_date') windows.push(`${p.constraint.start_time}-${p.constraint.end_time}`)
  return windows.length === PEAK_WINDOWS.length && windows.sort().every((w, i) => w === PEAK_WINDOWS[i])
}

/** A call to a model with peak hours (`hasPeakHours`) at `at`: the time its price is billed at (`at` itself when that is its time). */
export function billedAt(at: Date): Date {
  const t = at.getTime()
  const beijing = new Date(t + BEIJING_MS)
  const day = beijing.getUTCDay()
  const offAllDay = (t >= WEEKENDS_FROM && (day === 0 || day === 6)) || HOLIDAYS.has(beijing.toISOString().slice(0, 10))
  if (t >= PEAK_FROM && !offAllDay) return at
  const offPeak = new Date(t)
  offPeak.setUTCHours(12, 0, 0, 0)
  return offPeak
}

/**
 * The Beijing date of a call at `at` that `billedAt` kept at its time, when that is in a peak
 * window of a year HOLIDAYS does not list (priced at the peak price, half of it billed were the
 * date a holiday); null otherwise.
 */
export function unlisted(at: Date): string | null {
  const hour = at.getUTCHours()
  if (!((hour >= 1 && hour < 4) || (hour >= 6 && hour < 10))) return null
  const beijing = new Date(at.getTime() + BEIJING_MS)
  return beijing.getUTCFullYear() > HOLIDAYS_THROUGH ? beijing.toISOString().slice(0, 10) : null
}
