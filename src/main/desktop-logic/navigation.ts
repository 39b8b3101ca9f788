/** Where a link or `window.open` in the dashboard window may go. */
export type NavigationVerdict =
  /** The dashboard itself: stays in the window. */
  | 'inside'
  /** A web page or mail link: opens in the system browser or mail app. */
  | 'external'
  /** Anything else (file:, javascript:, custom schemes): not opened at all. */
  | 'blocked'

const EXTERNAL_SCHEMES = new Set(['http:', 'https:', 'mailto:'])

/** `appUrl` is the server the window loaded; only its exact origin counts as inside. */
export function classifyNavigation(target: string, appUrl: string): NavigationVerdict {
  let url: URL
  let app: URL
  try {
    url = new URL(target)
    app = new URL(appUrl)
  } catch {
    return 'blocked'
  }
  if (url.origin === app.origin && (url.protocol === 'http:' || url.protocol === 'https:')) return 'inside'
  return EXTERNAL_SCHEMES.has(url.protocol) ? 'external' : 'blocked'
}
