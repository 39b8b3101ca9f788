import { sameTimeZone } from '../../../shared/zone-name'

const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone

/**
 * `, Asia/Tokyo time` when the server's `timezone` (its days and months begin at midnight there)
 * is not the browser's, else '': a figure "today" read from another zone says which day it is.
 */
export function zoneNote(tz: string | null | undefined): string {
  return tz && !sameTimeZone(tz, browserZone) ? `, ${tz} time` : ''
}
