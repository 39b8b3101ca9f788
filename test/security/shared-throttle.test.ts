import { afterEach, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Every loopback address is one client for the slow-down of wrong tokens (dashboard-session.test.ts):
 * another user of the machine guessing from 127.0.0.x counts against the same bucket as the owner.
 * A right token or a live session cleared that bucket, so the owner's own requests (the open
 * dashboard polls every 5 s) handed the guesser fresh free guesses (the admin token's: throttle.test.ts).
 */
const DASH = 'shared-throttle-dashboard-0123'
let s: TestServer | null = null
afterEach(async () => {
  await s?.cleanup()
  s = null
})

describe("the owner's requests and another local user's guesses", () => {
  it("the owner's dashboard session does not clear the guesser's slow-down", async () => {
    s = await startTestServer({ dashboard: { token: DASH } })
    const login = await request(`${s.url}/?token=${DASH}`)
    const session = String(login.headers['set-cookie']).split(';')[0]
    const guess = (i: number) =>
      request(`${s!.url}/api/dashboard/summary`, { headers: { authorization: `Bearer guess-${i}` }, localAddress: '127.0.0.7' })
    // Guess until refused for a few seconds (the block doubles with each refused guess).
    let i = 0
    for (;;) {
      const r = await guess(i++)
      expect(r.status).toBe(401)
      if (Number(r.headers['retry-after'] ?? 0) >= 3) break
      expect(i).toBeLessThan(30)
    }
    // The owner's page polls.
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: session } })).status).toBe(200)
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { authorization: `Bearer ${DASH}` } })).status).toBe(200)
    const next = await guess(i)
    expect(next.status).toBe(401)
    expect(next.json().error.message).toMatch(/too many/i)
  })
})
