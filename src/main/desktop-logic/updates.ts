/**
 * Whether the packaged app checks for updates: only a packaged build (development runs from
 * sources and has no update feed), and never when BURNRATE_AUTO_UPDATE=0 (managed machines,
 * air-gapped installs).
 */
export function updatesEnabled(o: { isPackaged: boolean; env: NodeJS.ProcessEnv }): boolean {
  return o.isPackaged && o.env.BURNRATE_AUTO_UPDATE !== '0'
}

/** How often a running app looks again after the check at start. */
export const UPDATE_CHECK_INTERVAL_MS = 6 * 60 * 60 * 1000
