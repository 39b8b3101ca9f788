import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG } from '../admin/support'
import { request } from '../support/http'
import { startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * An imported call the proxy's record superseded is no call of its session: when it was the
 * session's last (or first), the dashboard still gave its time as the session's last_seen_at (or
 * started_at), and counted the session active with it, until the rollups were rebuilt (which leave
 * superseded calls out). They are now those of the session's calls left.
 */

const rig = supersedeRig('burnrate-superseded-session-times')

/** Claude Code's transcript of session `session`: answers at `times`, the one at `superseded` the answer the proxy records too. */
function transcript(session: string, times: number[], superseded: number): string {
  const lines = times.map((at, i) => ({
    type: 'assistant', sessionId: session, uuid: `u-${i}`, cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: `req_${i}`,
    message: { ...BODY, id: i === superseded ? BODY.id : `msg_other_answer_${i}`, usage: { ...BODY.usage, output_tokens: 1 } },
  }))
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

async function sessionAfter(name: string, times: number[], superseded: number) {
  const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
  const home = rig.home()
  rig.transcript(home, name, transcript(name, times, superseded))
  await rig.importLogs(t, home, times.length)
  await rig.proxy(t, `sk-ant-${name}-000000001`)
  await rig.untilSuperseded(t, BODY.id)
  const listed = (await request(`${t.url}/api/dashboard/sessions`)).json()
  const active = (await request(`${t.url}/api/dashboard/summary`)).json().active_sessions
  return { t, session: listed.sessions.find((s: any) => s.session === name), active }
}

describe("an imported call superseded when it was its session's last or first", () => {
  it("gives the session's last_seen_at back to its last call left: idle, not active", async () => {
    const now = Date.now()
    const older = now - 20 * 60_000
    const { t, session, active } = await sessionAfter('last', [older, now - 1000], 1)
    try {
      expect(session).toMatchObject({ requests: 1, started_at: new Date(older).toISOString(), last_seen_at: new Date(older).toISOString(), status: 'idle' })
      // Only the proxy's record's session is active.
      expect(active).toBe(1)
    } finally {
      await t.cleanup()
    }
  })

  it("gives the session's started_at to its first call left", async () => {
    const now = Date.now()
    const later = now - 500
    const { t, session } = await sessionAfter('first', [now - 3000, later], 0)
    try {
      expect(session).toMatchObject({ requests: 1, started_at: new Date(later).toISOString(), last_seen_at: new Date(later).toISOString() })
    } finally {
      await t.cleanup()
    }
  })
})
