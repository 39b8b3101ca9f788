import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/** Guessing the admin token: after five wrong tokens, each further attempt waits longer, in line. */

const TOKEN = 'admin-token-throttle-0123456789'
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ admin: { enabled: true, token: TOKEN } })
})
afterAll(() => t.cleanup())

function attempt(token: string) {
  return request(`${t.url}/api/admin/providers`, { headers: { authorization: `Bearer ${token}` } })
}

describe('repeated wrong admin tokens', () => {
  it('are slowed down: the first five answer at once, then then they wait in line, and the wait doubles as failures add up', async () => {
    for (let i = 0; i < 5; i++) expect((await attempt(`wrong-${i}`)).status).toBe(401)
    // Sent at once, the next three are checked one after another, 250 ms apart (sixth failure's delay).
    const started = performance.now()
    const done: number[] = []
    const replies = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const r = await attempt(`wrong-again-${i}`)
        done.push(performance.now() - started)
        return r
      }),
    )
    for (const r of replies) {
      expect(r.status).toBe(401)
      expect(r.json().error.type).toBe('unauthorized')
      expect(r.text).not.toContain(TOKEN)
    }
    done.sort((a, b) => a - b)
    expect(done[0]).toBeGreaterThanOrEqual(240)
    expect(done[1]).toBeGreaterThanOrEqual(490)
    expect(done[2]).toBeGreaterThanOrEqual(740)
    // Eight failures now: the next attempt waits 250 * 2^3 = 2 s.
    const t0 = performance.now()
    expect((await attempt('wrong-ninth')).status).toBe(401)
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1990)
  })

  it('the right token gets in at once, however many wrong ones wait in line', async () => {
    expect((await attempt(TOKEN)).status).toBe(200)
    expect((await attempt('wrong-after-success')).status).toBe(401)
    expect((await attempt(TOKEN)).status).toBe(200)
  })
})
