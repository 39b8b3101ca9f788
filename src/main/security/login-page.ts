import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * The dashboard's login page (with dashboard.token set): a form that posts the token to
 * `/login` (./login-post.ts), so it is never in an address (a reverse proxy's access log, the
 * browser's history, a Referer). An address the desktop app opens carries a one-time code (or,
 * attached to a headless Burnrate, the token) in its fragment, `/login#login=<code>`, which no
 * request line holds: the page's script takes it out of the address and posts it, keeping the
 * fragment's other values (the window's `admin_token`) for the dashboard it lands on.
 */

const STYLE =
  ':root{color-scheme:light dark;font-family:system-ui,sans-serif}body{margin:0;display:grid;place-items:center;min-height:100vh}' +
  'main{max-width:22rem;padding:1.5rem}h1{font-size:1.25rem;margin:0 0 .75rem}label{display:block;margin:.75rem 0 .25rem}' +
  'input{box-sizing:border-box;width:100%;padding:.4rem;font:inherit}button{margin-top:.75rem;padding:.4rem .9rem;font:inherit}' +
  '.error{color:#c62828}'

const SCRIPT =
  '(function(){var h=location.hash.slice(1);if(!h)return;var p=new URLSearchParams(h);' +
  "var code=p.get('login'),token=p.get('token');if(code===null&&token===null)return;p.delete('login');p.delete('token');" +
  "history.replaceState(null,'',location.pathname+location.search);var f=document.getElementById('login');var rest=p.toString();" +
  "f.action='/login'+(rest?'#'+rest:'');var t=document.getElementById('token');" +
  "if(code!==null){var c=document.getElementById('code');c.disabled=false;c.value=code;t.required=false;t.disabled=true}else{t.value=token}" +
  'f.submit()})()'

const hash = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`

/** Nothing but its own style and script, and a form to this server. */
export const LOGIN_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${hash(STYLE)}`,
  `script-src ${hash(SCRIPT)}`,
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** `next`: where logging in goes on to (./login-next.ts), posted with the form; `/` leaves it out. */
export function loginPageHtml(error: string | null, next = '/'): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="referrer" content="same-origin"><title>Burnrate: log in</title><style>${STYLE}</style></head><body><main>` +
    '<h1>Burnrate dashboard</h1><p>This dashboard needs its token (<code>dashboard.token</code> in the config).</p>' +
    (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '') +
    // (The hidden user name lets a password manager keep the token for this address; not read.)
    '<form method="post" action="/login" id="login"><input name="username" value="dashboard" autocomplete="username" hidden><label for="token">Dashboard token</label>' +
    '<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>' +
    '<input id="code" name="login" type="hidden" disabled>' +
    (next !== '/' ? `<input type="hidden" name="next" value="${escapeHtml(next)}">` : '') +
    '<button type="submit">Log in</button></form>' +
    `</main><script>${SCRIPT}</script></body></html>\n`
  )
}

/** Whether the request is a browser's asking for a page (so it gets the login page, not JSON). */
export function wantsHtml(req: IncomingMessage): boolean {
  return (req.headers.accept ?? '').includes('text/html')
}

/**
 * Answers with the login page (200 at `/login`, 401 where a session was needed), `error` shown
 * above the form, `next` where logging in goes on to (a checked path of this server).
 */
export function sendLoginPage(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  error: string | null,
  headers: Record<string, string> = {},
  next = '/',
): void {
  const body = loginPageHtml(error, next)
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': LOGIN_PAGE_CSP,
    'x-content-type-options': 'nosniff',
    // Not no-referrer: a browser then sends its form with `Origin: null`, and the same-origin
    // check refuses it. Its address holds nothing (the script takes the fragment out first), and
    // no other site is sent even that.
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
    ...headers,
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}
