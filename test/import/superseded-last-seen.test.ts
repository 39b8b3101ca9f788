import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { type TestServer, startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * An imported call the proxy's record superseded is no request of its key: when it was the key's
 * newest, the admin API's /api-keys still gave its time as the key's last_seen_at (and its tenant)
 * until a restart, which reads them from the calls still requests; a key with no call left stayed
 * listed. They are now those of the key's newest call left, as a restart reads them.
 */

const rig = supersedeRig('burnrate-superseded-last-seen')

/** Claude Code's transcript: an older answer (when `older`), then the one the proxy records too, imported while it still streamed. */
function transcript(session: string, older: number | null, newest: number): string {
  const line = (uuid: string, at: number, requestId: string, id: string) => ({
    type: 'assistant', sessionId: session, uuid, cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId,
    message: { ...BODY, id, usage: { ...BODY.usage, output_tokens: 1 } },
  })
  const lines = [...(older === null ? [] : [line('u-0', older, 'req_old', 'msg_older_answer')]), line('u-1', newest, 'req_sup', BODY.id)]
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

/** A server that imported the transcript, then proxied its newest answer; resolves once that imported call is superseded. */
async function superseded(name: string, older: number | null, newest: number): Promise<TestServer> {
  const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
  const home = rig.home()
  rig.transcript(home, name, transcript(name, older, newest))
  await rig.importLogs(t, home, older === null ? 1 : 2)
  // Before: the imported calls are the keyless key's requests, the newest its last-seen time.
  expect(await keyless(t.url)).toMatchObject({ requests_month: older === null ? 1 : 2, last_seen_at: new Date(newest).toISOString() })
  await rig.proxy(t, `sk-ant-${name}-000000001`)
  await rig.untilSuperseded(t, BODY.id)
  return t
}

const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))
const view = (k: any) => (k ? { requests_month: k.requests_month, last_seen_at: k.last_seen_at, tenant: k.tenant } : null)

describe("an imported call superseded when it was its key's newest", () => {
  it("gives the key's last_seen_at back to its newest call left, as a restart reads it", async () => {
    const now = Date.now()
    const older = now - 60_000
    const t = await superseded('older', older, now - 1000)
    try {
      const live = view(await keyless(t.url))
      expect(live).toEqual({ requests_month: 1, last_seen_at: new Date(older).toISOString(), tenant: '' })
      const again = await t.restart()
      try {
        expect(view(await keyless(again.url))).toEqual(live)
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })

  it('leaves a key with no call left unlisted, as a restart does', async () => {
    const t = await superseded('alone', null, Date.now() - 1000)
    try {
      expect(view(await keyless(t.url))).toBeNull()
      const again = await t.restart()
      try {
        expect(view(await keyless(again.url))).toBeNull()
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
