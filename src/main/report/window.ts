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
  if (since !== null && until !== null && until <= since) {
    return {
      param: 'until',
      message: `${name('until', true)} (${text.until}, up to ${iso(until)}) must be after ${name('since', false)} (${text.since}, from ${iso(since)})`,
    }
  }
  return null
}

const iso = (t: number) => new Date(t).toISOString()
