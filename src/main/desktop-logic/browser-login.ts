import { randomBytes } from 'node:crypto'
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
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
/** The pages' names (9 random bytes, base64url), and nothing else's. */
const PAGE_NAME = /^dashboard-login-[A-Za-z0-9_-]{12}\.html$/

/** `s` for an HTML attribute between double quotes. */
function attr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/**
 * Opens the dashboard's address in the system browser. One that carries a secret (a one-time
 * code, `/login#login=<code>`, or attached to a headless Burnrate its token, `/login#token=`;
 * in the fragment, which the login page posts: never in a request line) is never put on a command line:
 * the browser is started through xdg-open/open/start with the address as an argument, and every
 * user of the machine can read that in `ps` (/proc/<pid>/cmdline) and use the code before the
 * browser does. The browser gets a page only the user may read (0600, made new in `dir`) that
 * sends it on to the address; the page is removed once the code has stopped working.
 * Returns the page's path (null when the address was opened as it is).
 */
export function openInBrowser(url: string, d: BrowserLoginDeps): string | null {
  const parsed = new URL(url)
  const fragment = new URLSearchParams(parsed.hash.slice(1))
  const secret = (p: URLSearchParams) => p.has('login') || p.has('token')
  if (!secret(parsed.searchParams) && !secret(fragment)) {
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

/**
 * Removes the login pages left in `dir` (the app quit before their minute was up, so their timer
 * never ran): a page holds a login code, or attached to a headless Burnrate its token. Only the
 * app's own: a regular file of the user's with a page's name; never a link (nor what it points
 * to) or a folder. Run at start (one app runs at a time: any page there is from before) and at
 * quit. Returns the paths removed.
 */
export function sweepLoginPages(dir: string): string[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const me = typeof process.getuid === 'function' ? process.getuid() : null
  const removed: string[] = []
  for (const name of names) {
    if (!PAGE_NAME.test(name)) continue
    const file = join(dir, name)
    try {
      const st = lstatSync(file)
      if (!st.isFile() || (me !== null && st.uid !== me)) continue
      // (Swapped for a link meanwhile, unlink removes the link, never what it names.)
      unlinkSync(file)
      removed.push(file)
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
  return removed
}
