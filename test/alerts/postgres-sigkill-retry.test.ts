import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_FIXTURE } from '../budgets/support'
import { getJson } from '../dashboard/seed'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { killCall, killedRetrySetup } from './pg-kill'

/**
 * On PostgreSQL, a threshold's webhook alert whose retry was waiting when the instance that
 * claimed it was killed outright (a crash, SIGKILL, an OOM kill: no shutdown ran) was lost: its
 * claim stood (the webhook may have had an attempt), so no instance sent it again, that one's next
 * start included. Against the built server (out/main/cli.js).
 */

const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-kill-aaaaaaaaaaaa-0002'

describe('a webhook retry waiting when the PostgreSQL instance that claimed it is killed', () => {
  it('is sent by that instance started again, once', async () => {
    const { hook, store, config, first } = await killedRetrySetup(h)
    let again: BuiltServer | null = null
    try {
      expect((await killCall(first.url, KEY)).status).toBe(200)
      // Claimed and tried once (the webhook refused it; the retry waits a minute), the call stored: then killed.
      await eventually(() => hook.posts() === 1, 20_000)
      await eventually(async () => (await store.all('SELECT id FROM alert_claims')).length === 1 && (await store.all('SELECT 1 FROM calls')).length === 1, 20_000)
      await first.kill('SIGKILL')
      again = await startBuiltServer(config, h.upstream.url, first.dataDir)
      await eventually(() => hook.got.length === 1, 20_000)
      expect(hook.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
      // Once: a clean stop and start after it sends it no more.
      expect(await again.stop()).toBe(0)
      const third = await startBuiltServer(config, h.upstream.url, first.dataDir)
      again = third
      // A crossing of another key after that start's read of the meters is claimed after what the
      // start sends (what its file kept, a crossing it read back), and a webhook's alerts go in turn:
      // the webhook has it after any such one, and the first alert once.
      await eventually(async () => (await getJson(`${third.url}/api/health`)).body.calls_feed?.reads > 0, 20_000)
      const later = 'sk-kill-bbbbbbbbbbbb-0002'
      expect((await killCall(third.url, later)).status).toBe(200)
      await eventually(() => hook.got.some((g) => g.api_key_hash === hashKey(later)), 20_000)
      expect(hook.got.map((g) => g.api_key_hash)).toEqual([hashKey(KEY), hashKey(later)])
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 90_000)
})
