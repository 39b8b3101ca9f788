/** The values of BURNRATE_AUTO_UPDATE that turn the check off (any case, spaces around ignored). */
const OFF = new Set(['0', 'false', 'no', 'off'])

/**
 * Whether the packaged app checks for updates: only a packaged build (development runs from
 * sources and has no update feed), and never when BURNRATE_AUTO_UPDATE is 0, false, no or off
 * (managed machines, air-gapped installs). `false` as BURNRATE_PRICE_AUTO_UPDATE takes it: an
 * administrator who set both to false had the app update itself all the same.
 */
export function updatesEnabled(o: { isPackaged: boolean; env: NodeJS.ProcessEnv }): boolean {
  return o.isPackaged && !OFF.has((o.env.BURNRATE_AUTO_UPDATE ?? '').trim().toLowerCase())
}

/** How often a running app looks again after the check at start. */
export const UPDATE_CHECK_INTERVAL_MS = 6 * 60 * 60 * 1000
