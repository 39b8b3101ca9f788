import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { runCliCaptured } from '../support/cli'
import { eventually } from '../support/http'
import { startTestServer } from '../support/server'
import { BODY, PROJECT_DIR, supersedeRig } from '../support/superseded'

/**
 * `burnrate import` beside a server on the same SQLite file, superseding an imported call at its
 * read of the grown log (the server had recorded the answer but not yet looked for its imported
 * twin): the server heard the move as money only (a notice of the cost's change; none at all for a
 * plan's call or one at $0), so the call stayed a request of its key, in the admin API's
 * requests_month and last_seen_at, until the server started again.
 */

const rig = supersedeRig('burnrate-superseded-beside')
const OAUTH_BETAS = ['claude-code-20250219', 'oauth-2025-04-20']

/** Claude Code's transcript of the answer: its first line, then (`grown`) its last; `plan`: sent with a Claude account's OAuth token. */
function transcript(session: string, at: number, plan: boolean, grown: boolean): string {
  const line = (uuid: string, ts: number, output: number) => ({
    type: 'assistant', sessionId: session, uuid, cwd: '/home/dev/shop', timestamp: new Date(ts).toISOString(), requestId: 'req_sup',
    ...(plan ? { requestRef: 'req-1' } : {}), message: { ...BODY, usage: { ...BODY.usage, output_tokens: output } },
  })
  const lines = [
    ...(plan ? [{ type: 'api-request', id: 'req-1', sessionId: session, params: { betas: OAUTH_BETAS, model: BODY.model } }] : []),
    line('u-1', at, 1),
    ...(grown ? [line('u-2', at + 500, BODY.usage.output_tokens)] : []),
  ]
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))

describe('an imported call burnrate import supersedes beside a running server', () => {
  for (const plan of [false, true]) {
    it(`is no request of its key on that server at once (${plan ? 'a plan' : 'money'})`, async () => {
      // The server does not look for the imported twin as it records the answer (stopped at that moment, say): the import's next read does.
      const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, undefined, { create: { noticeIntervalMs: 100, supersedeAfterMs: 3_600_000 } })
      try {
        const home = rig.home()
        // Older than the wait an import beside a running server gives the newest lines.
        const at = Date.now() - 20 * 60_000
        const cli = async () => {
          const r = await runCliCaptured('import', 'claude-code', '--path', join(home, PROJECT_DIR, '..'), '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
          expect(r.code, r.out).toBe(0)
          return JSON.parse(r.out).results[0]
        }
        rig.transcript(home, 'beside', transcript('beside', at, plan, false))
        expect(await cli()).toMatchObject({ imported: 1 })
        await eventually(async () => (await keyless(t.url))?.requests_month === 1, 10_000)

        await rig.proxy(t, 'sk-ant-beside-00000000001')
        rig.transcript(home, 'beside', transcript('beside', at, plan, true))
        expect(await cli()).toMatchObject({ superseded: 1 })
        const { db } = t.server
        expect(db.prepare("SELECT superseded_by FROM calls WHERE source = 'import'").pluck().get()).not.toBeNull()
        // The server has read every notice the import left.
        await eventually(() => db.prepare('SELECT count(*) FROM call_notices').pluck().get() === 0, 10_000)
        const live = await keyless(t.url)
        expect(live?.spend_month_usd ?? 0).toBe(0)
        // No call of the keyless key left this month: not listed, as after a restart.
        expect(live).toBeUndefined()
        const again = await t.restart()
        try {
          expect(await keyless(again.url)).toBeUndefined()
        } finally {
          await again.cleanup()
        }
      } finally {
        await t.cleanup()
      }
    })
  }
})
