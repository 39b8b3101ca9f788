/**
 * The window of a report or export, `since` to `until` (ms; `until` the exclusive end, a day's
 * next midnight), checked the same way by the API (../dashboard/params.ts, a 400 naming the
 * parameter) and the CLI (--since/--until, exit code 2).
 */

/** A window that cannot be asked for: the parameter at fault and what to say of it. */
export interface WindowProblem {
  param: 'since' | 'until'
  /** The sentence (no full stop), each parameter named by `name` and shown with its text as given. */
  message: string
}

/**
 * Why `since`..`until` is no window, or null. `text` is each as given; `name` words a parameter,
 * `leading` when it begins the sentence (the API: "The parameter until", then "since"; the CLI: "--until"). An `until` that does not end after `since` (the two
 * swapped) was answered with no rows: "no spend" for a window that had some.
 */
export function windowProblem(
  since: number | null,
  until: number | null,
  text: { since?: string; until?: string },
  name: (p: 'since' | 'until', leading: boolean) => string,
): WindowProblem | null {
  // A window holding no time a call can bear: a 400, where its answer wrote a year 10000 (or -1).
  if (since !== null && since >= END_TIME) {
    return { param: 'since', message: `${name('since', true)} (${text.since}) must begin before the year 10000; ${YEARS}` }
  }
  if (until !== null && until <= FIRST_TIME) {
    return { param: 'until', message: `${name('until', true)} (${text.until}) must end after the year 0000 begins (${iso(FIRST_TIME)}); ${YEARS}` }
  }
  if (since !== null && until !== null && until <= since) {
    return {
      param: 'until',
      message: `${name('until', true)} (${text.until}, up to ${iso(until)}) must be after ${name('since', false)} (${text.since}, from ${iso(since)})`,
    }
  }
  return null
}

const iso = (t: number) => new Date(t).toISOString()

/**
 * The first time a call can bear, 0000-01-01T00:00:00.000Z, and the end of the last,
 * 10000-01-01T00:00:00.000Z: the contract's times have four-digit years (a team member's call is
 * refused otherwise, team/validate.ts), which JavaScript writes past them as "+010000-…".
 */
export const FIRST_TIME = Date.parse('0000-01-01T00:00:00.000Z')
export const END_TIME = Date.parse('9999-12-31T23:59:59.999Z') + 1
const YEARS = 'calls bear times of the years 0000 to 9999'

/**
 * A window's `since` and `until` as a report answers them (ISO times): a start before the year
 * 0000 is null (from the beginning), an end from the year 10000 on null (no end), as without
 * them, since no call lies beyond (`until=9999-12-31` was answered "+010000-01-01T00:00:00.000Z",
 * which ISO readers refuse). `windowProblem` refuses the other two ends.
 */
export function windowTimes(since: number | null, until: number | null): { since: string | null; until: string | null } {
  return {
    since: since === null || since < FIRST_TIME ? null : iso(since),
    until: until === null || until >= END_TIME ? null : iso(until),
  }
}
