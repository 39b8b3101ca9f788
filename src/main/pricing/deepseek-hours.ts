/**
 * DeepSeek V4's peak hours. DeepSeek bills V4 calls at twice the off-peak price in its peak hours,
 * Beijing time 09:00-12:00 and 14:00-18:00 (01:00-04:00 and 06:00-10:00 UTC), since 2026-08-17,
 * on weekdays only: a Beijing weekend is off-peak all day (api-docs.deepseek.com/quick_start/pricing).
 * The price data gives those hours as daily windows, which a price can tie to no date and no day
 * of the week (its comment on deepseek-v4-flash says so): the library prices a call in them at the
 * peak price on a weekend too, twice the bill, and before 2026-08-17 too, when V4 had one flat
 * price (0.44 instead of 0.14 per million input tokens for V4 Flash).
 *
 * `billedAt` gives such a call a time the data prices as billed: the same UTC date at 12:00 (20:00
 * in Beijing, in no peak window), whose price is that date's off-peak one, or before 2026-08-17
 * the flat one. China's public holidays are off-peak all day too (DeepSeek's page: weekdays "excluding
 * Chinese statutory holidays"); those the State Council has published since 2026-08-17 are listed in
 * HOLIDAYS, a later one is priced at the peak price in its peak hours until it is added.
 */

/** The first date of the data's peak windows (its `start_date` for V4's off-peak price). */
const PEAK_FROM = Date.parse('2026-08-17T00:00:00Z')
/** From 2026-08-23 in Beijing, weekends are off-peak all day (the price data's comment). */
const WEEKENDS_FROM = Date.parse('2026-08-22T16:00:00Z')
const BEIJING_MS = 8 * 3600_000
/** Beijing dates of China's statutory holidays from 2026-08-17 (国办发明电〔2025〕7号: Mid-Autumn, National Day). */
const HOLIDAYS = new Set(['2026-09-25', '2026-09-26', '2026-09-27', '2026-10-01', '2026-10-02', '2026-10-03', '2026-10-04', '2026-10-05', '2026-10-06', '2026-10-07'])
/** The V4 models the data prices with those windows, as its `match` rules name them. */
const V4 = /^deepseek-v4-(flash|pro)/i

export function billedAt(model: string, at: Date): Date {
  if (!V4.test(model)) return at
  const t = at.getTime()
  const beijing = new Date(t + BEIJING_MS)
  const day = beijing.getUTCDay()
  const offAllDay = (t >= WEEKENDS_FROM && (day === 0 || day === 6)) || HOLIDAYS.has(beijing.toISOString().slice(0, 10))
  if (t >= PEAK_FROM && !offAllDay) return at
  const offPeak = new Date(t)
  offPeak.setUTCHours(12, 0, 0, 0)
  return offPeak
}
