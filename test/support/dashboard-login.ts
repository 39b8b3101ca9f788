import { type Reply, request } from './http'

/**
 * What the dashboard's login page does with an address Burnrate opens (`/login#login=<code>`, or
 * `/login#token=<token>` attached to a headless Burnrate): posts the fragment's code or token to
 * `/login` from the server's own origin (../../src/main/security/login-page.ts).
 */
export function loginFromLink(link: string, headers: Record<string, string> = {}): Promise<Reply> {
  const u = new URL(link)
  const fragment = new URLSearchParams(u.hash.slice(1))
  const form = new URLSearchParams()
  for (const k of ['login', 'token']) {
    const v = fragment.get(k)
    if (v !== null) form.set(k, v)
  }
  return request(`${u.origin}/login`, {
    method: 'POST',
    headers: { origin: u.origin, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: form.toString(),
  })
}
