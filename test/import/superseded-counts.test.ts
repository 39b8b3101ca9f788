import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * What an imported call the proxy's record superseded leaves in the counts read without a restart:
 * a plan's (subscription) call was still a request of its key in the admin API's requests_month
 * (only money moved a key's counts), and its session stayed listed at 0 requests and counted
 * active in the dashboard: a session no call of which counts any more.
 */

const OAUTH_BETAS = ['claude-code-20250219', 'oauth-2025-04-20']

const rig = supersedeRig('burnrate-superseded-counts')

/** Claude Code's transcript of one answer imported while it still streamed; `plan`: sent with a Claude account's OAuth token. */
function transcript(session: string, plan: boolean): string {
  const at = Date.now() - 1000
  const lines = [
    ...(plan ? [{ type: 'api-request', id: 'req-1', sessionId: session, params: { betas: OAUTH_BETAS, model: BODY.model } }] : []),
    {
      type: 'assistant', sessionId: session, uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
      ...(plan ? { requestRef: 'req-1' } : {}), message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
    },
  ]
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

/** A server that imported the answer's first line, then proxied the answer; resolves once the imported call is superseded. */
async function superseded(name: string, plan: boolean): Promise<TestServer> {
  const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
  const { db } = t.server
  // A home of its own: each test's one answer is in its log only.
  const home = rig.home()
  rig.transcript(home, name, transcript(name, plan))
  await rig.importLogs(t, home, 1)
  expect(db.prepare("SELECT billing FROM calls WHERE source = 'import'").pluck().get()).toBe(plan ? 'subscription' : 'api')
  await rig.proxy(t, `sk-ant-${name}-000000001`)
  await rig.untilSuperseded(t)
  return t
}

const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))

describe('an imported call superseded, read without a restart', () => {
  for (const plan of [true, false]) {
    it(`is no request of its key in the admin API's requests_month (${plan ? 'a plan' : 'money'})`, async () => {
      const t = await superseded(plan ? 'plan' : 'money', plan)
      try {
        expect((await keyless(t.url))?.requests_month ?? 0).toBe(0)
        // As a restart reads it from the ledger.
        const again = await t.restart()
        try {
          expect((await keyless(again.url))?.requests_month ?? 0).toBe(0)
        } finally {
          await again.cleanup()
        }
      } finally {
        await t.cleanup()
      }
    })
  }

  for (const range of ['24h', '30d']) {
    it(`is not among the most expensive requests, and the export still lists it (${range})`, async () => {
      const t = await superseded(`expensive-${range}`, false)
      try {
        const { db } = t.server
        const proxied = db.prepare("SELECT id, cost_usd FROM calls WHERE source = 'proxy'").get() as { id: number; cost_usd: number }
        // The one answer is one request, the proxy's (the imported call listed at $0 beside it was a second).
        for (const limit of [1, 10, 100]) {
          const listed = (await request(`${t.url}/api/dashboard/expensive?range=${range}&limit=${limit}`)).json()
          expect(listed.requests.map((c: any) => [c.id, c.cost_usd]), `limit ${limit}`).toEqual([[proxied.id, proxied.cost_usd]])
        }
        // The audit trail: the export lists both calls, the imported one at $0.
        const exported = (await request(`${t.url}/api/dashboard/export?format=json&range=${range}`)).json()
        expect(exported.calls.map((c: any) => [c.source, c.cost_usd]).sort()).toEqual([['import', 0], ['proxy', proxied.cost_usd]])
      } finally {
        await t.cleanup()
      }
    })
  }

  it('leaves no session of its own in the sessions list nor in the active sessions', async () => {
    const t = await superseded('sessions', true)
    try {
      const listed = (await request(`${t.url}/api/dashboard/sessions`)).json()
      // The one answer is one session: the proxy's record's (the imported call's session counts no call any more).
      expect(listed.sessions.map((s: any) => [s.session === 'sessions', s.requests])).toEqual([[false, 1]])
      expect(listed.total).toBe(1)
      expect((await request(`${t.url}/api/dashboard/summary`)).json().active_sessions).toBe(1)
    } finally {
      await t.cleanup()
    }
  })
})
