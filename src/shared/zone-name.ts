/**
 * Whether two IANA zone names are one zone, for the server and the dashboard alike (no Node or DOM
 * APIs here): the dashboard names the server's zone only to a browser in another one.
 */

/** Names of UTC itself (each always zero offset, no daylight time), matched exactly; any other spelling goes through Intl. */
const UTC_NAMES = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT'])

/** True when `tz` is UTC by one of its usual names. */
export function isUtc(tz: string): boolean {
  return UTC_NAMES.has(tz)
}

/** True when `a` and `b` name the same zone (`UTC` and `Etc/UTC`, or one name twice); false if either is not a zone. */
export function sameTimeZone(a: string, b: string): boolean {
  if (a === b || (isUtc(a) && isUtc(b))) return true
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: a }).resolvedOptions().timeZone === new Intl.DateTimeFormat('en-US', { timeZone: b }).resolvedOptions().timeZone
  } catch {
    return false
  }
}
