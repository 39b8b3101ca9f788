import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A team server's dashboard behind a reverse proxy that ends TLS (README: Reporting to a team
 * server). Its session cookie had no `Secure`, so a browser sent it over plain HTTP too: one
 * `http://burnrate.team.example` typed or followed (before the proxy's redirect to https) put
 * the session in clear text on the network, for anyone on the path to use until Burnrate restarts.
 */
const TOKEN = 'dash-tls-token-0123456789'
let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN }, server: { allowed_hosts: ['burnrate.team.example'] } })
})
afterAll(async () => {
  await s.cleanup()
})

async function login(headers: Record<string, string>): Promise<string> {
  const res = await request(`${s.url}/?token=${TOKEN}`, { headers })
  expect(res.status).toBe(303)
  return String(res.headers['set-cookie'])
}

describe('the dashboard session cookie', () => {
  it('is Secure when the browser came over HTTPS (the TLS proxy says so), so it never travels in clear text', async () => {
    for (const headers of [{ 'x-forwarded-proto': 'https' }, { forwarded: 'for=192.0.2.60;proto=https' }, { 'x-forwarded-proto': 'https, http' }] as Record<string, string>[]) {
      const cookie = await login({ host: 'burnrate.team.example', ...headers })
      expect({ headers, cookie }).toEqual({ headers, cookie: expect.stringMatching(/; Secure(;|$)/) })
      expect(cookie).toMatch(/; HttpOnly/)
      expect(cookie).toMatch(/; SameSite=Strict/)
    }
  })

  it('is not Secure over plain HTTP (http://127.0.0.1), where a browser would drop a Secure cookie', async () => {
    for (const headers of [{}, { 'x-forwarded-proto': 'http' }] as Record<string, string>[]) {
      expect(await login(headers)).not.toMatch(/Secure/)
    }
  })
})
