import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export interface BrowserLoginDeps {
  /** A folder private to the user (the app's userData): the page is written there. */
  dir: string
  /** Hands an address to the system's browser (electron's shell.openExternal). */
  open(url: string): unknown
  /** When the page is removed (ms); the login code it holds works for a minute. */
  removeAfterMs?: number
}

const REMOVE_AFTER_MS = 60_000

/** `s` for an HTML attribute between double quotes. */
function attr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/**
 * Opens the dashboard's address in the system browser. One that carries a secret (a one-time
 * `?login=` code, or `?token=` attached to a headless Burnrate) is never put on a command line:
 * the browser is started through xdg-open/open/start with the address as an argument, and every
 * user of the machine can read that in `ps` (/proc/<pid>/cmdline) and use the code before the
 * browser does. The browser gets a page only the user may read (0600, made new in `dir`) that
 * sends it on to the address; the page is removed once the code has stopped working.
 * Returns the page's path (null when the address was opened as it is).
 */
export function openInBrowser(url: string, d: BrowserLoginDeps): string | null {
  const query = new URL(url).searchParams
  if (!query.has('login') && !query.has('token')) {
    d.open(url)
    return null
  }
  mkdirSync(d.dir, { recursive: true, mode: 0o700 })
  const file = join(d.dir, `dashboard-login-${randomBytes(9).toString('base64url')}.html`)
  const a = attr(url)
  const html =
    '<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">' +
    `<meta http-equiv="refresh" content="0;url=${a}"><title>Burnrate</title></head>` +
    `<body><p><a href="${a}">Open the Burnrate dashboard</a></p></body></html>\n`
  const fd = openSync(file, 'wx', 0o600)
  try {
    writeFileSync(fd, html)
  } finally {
    closeSync(fd)
  }
  setTimeout(() => rmSync(file, { force: true }), d.removeAfterMs ?? REMOVE_AFTER_MS).unref()
  d.open(pathToFileURL(file).href)
  return file
}
