import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { runCliCaptured } from '../support/cli'
import { eventually, request } from '../support/http'
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

/**
 * The server superseding (as it records the answer) a call `burnrate import` stored beside it
 * moments before, whose notice it had not read yet (it reads them every 2 s): the move took the
 * call's money off a spend that never held it (kept at 0) and its request off a count that never
 * had it, then the notice counted both, so the answer's money counted twice in today's and this
 * month's spend and the meters, and the key was listed at 0 requests with the superseded call's
 * time, until a restart. The notices written before a move are now read before it.
 */
describe('a call burnrate import stored beside a running server, superseded there before the server read its notice', () => {
  it('counts neither its money nor its request: the key not listed, as after a restart', async () => {
    // The server reads the notices only when told here (the import and the supersede both come first).
    const config = { ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }
    const t = await startTestServer(config, rig.upstream.url, undefined, { create: { noticeIntervalMs: 3_600_000 } })
    try {
      const home = rig.home()
      const at = Date.now() - 20 * 60_000
      rig.transcript(home, 'unread', transcript('unread', at, false, false))
      const r = await runCliCaptured('import', 'claude-code', '--path', join(home, PROJECT_DIR, '..'), '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 1 })
      // The proxy records the answer and supersedes the imported call itself, its notice unread.
      await rig.proxy(t, 'sk-ant-unread-00000000001')
      await rig.untilSuperseded(t)
      const { db, context } = t.server
      // Its notice read (at the latest now): the call counted once, then taken off.
      context.notices!.poll()
      expect(db.prepare('SELECT count(*) FROM call_notices').pluck().get()).toBe(0)
      const live = await keyless(t.url)
      expect(live?.spend_month_usd ?? 0).toBe(0)
      expect(live).toBeUndefined()
      // The `*` rule's meter of calls without a key: nothing.
      const listed = (await request(`${t.url}/api/dashboard/budgets`)).json()
      expect(listed.rules.find((r: any) => r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0).toBe(0)
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
})

/**
 * A rule change re-reads the ledger (the meters) and moves the notices read past what it read: a
 * call `burnrate import` stored beside the server whose notice was not read yet was in the meters
 * but never counted in its key's requests (the key registry is not read again on SQLite), so the
 * key was missing it until a restart, and once superseded it was taken off all the same: one
 * request less than the key has (below zero for a key with no other).
 */
describe('a call burnrate import stored beside a running server, its notice passed by a rule change', () => {
  it('is a request of its key, and none once superseded', async () => {
    const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, undefined, { create: { noticeIntervalMs: 3_600_000 } })
    try {
      const home = rig.home()
      const at = Date.now() - 20 * 60_000
      // An older answer of the keyless key too, which stays its request.
      const older = at - 60_000
      const other = JSON.stringify({
        type: 'assistant', sessionId: 'passed', uuid: 'u-0', cwd: '/home/dev/shop', timestamp: new Date(older).toISOString(), requestId: 'req_old',
        message: { ...BODY, id: 'msg_older_answer', usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n'
      rig.transcript(home, 'passed', other + transcript('passed', at, false, false))
      const r = await runCliCaptured('import', 'claude-code', '--path', join(home, PROJECT_DIR, '..'), '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 2 })
      // A new rule re-reads the ledger before the notices are read.
      expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBeLessThan(300)
      t.server.context.notices!.poll()
      expect(await keyless(t.url)).toMatchObject({ requests_month: 2, last_seen_at: new Date(at).toISOString() })

      await rig.proxy(t, 'sk-ant-passed-00000000001')
      await rig.untilSuperseded(t, BODY.id)
      expect(await keyless(t.url)).toMatchObject({ requests_month: 1, last_seen_at: new Date(older).toISOString() })
      const again = await t.restart()
      try {
        expect(await keyless(again.url)).toMatchObject({ requests_month: 1, last_seen_at: new Date(older).toISOString() })
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
