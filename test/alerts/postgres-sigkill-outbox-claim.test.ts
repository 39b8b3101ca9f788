import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { NANO_FIXTURE, pgBudgetServer } from '../budgets/support'
import { getJson } from '../dashboard/seed'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { killBudgets, killCall, killedRetrySetup } from './pg-kill'

/**
 * On PostgreSQL, the alerts an instance killed outright left in its own file (`alert_outbox`)
 * were sent by its next start with no claim: one it had sent while the database could not be asked
 * for its claim (sent unasked, its retry waiting at the kill) was sent from the file, and again by
 * the same start's read of the crossing back, which found it unclaimed and claimed it: the webhook
 * got it twice; and one it held the claim of was sent from the file with that claim neither let go
 * nor settled as its delivery ended: refused to the last (a stale password's 401), it was sent by
 * no instance, the one that had lost the claim standing by for it until it aged out. Against the
 * built server (out/main/cli.js).
 */

const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-kill-aaaaaaaaaaaa-0003'

/** A webhook behind basic auth (alerts:new-5ecret): 401 to any other, each POST it took in `got`. */
async function authHook() {
  const got: any[] = []
  const state = { refused: 0 }
  const good = `Basic ${Buffer.from('alerts:new-5ecret').toString('base64')}`
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (req.headers.authorization !== good) {
      state.refused++
      return void res.writeHead(401).end()
    }
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  const url = (password: string) => `http://alerts:${password}@127.0.0.1:${port}/hook`
  return { url, got, state, close: () => new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections())) }
}

describe('an alert sent unasked whose retry was waiting when its PostgreSQL instance was killed', () => {
  it('is sent by that instance started again, once', async () => {
    const { hook, store, config, first } = await killedRetrySetup(h)
    const sent = () => hook.got.filter((g) => g.api_key_hash === hashKey(KEY))
    let again: BuiltServer | null = null
    try {
      // Claims cannot be made (the query fails): the alert goes unasked.
      await ensurePostgresSchema(store)
      await store.run(`CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$`)
      await store.run('CREATE TRIGGER refuse_claims BEFORE INSERT ON alert_claims FOR EACH ROW EXECUTE FUNCTION refuse_claims()')
      expect((await killCall(first.url, KEY)).status).toBe(200)
      // Tried once (the webhook refused it; the retry waits a minute), the call stored: then killed.
      await eventually(() => hook.posts() === 1, 20_000)
      await eventually(async () => (await store.all('SELECT 1 FROM calls')).length === 1, 20_000)
      await first.kill('SIGKILL')
      await store.run('DROP TRIGGER refuse_claims ON alert_claims')
      again = await startBuiltServer(config, h.upstream.url, first.dataDir)
      await eventually(() => hook.got.length === 1, 20_000)
      expect(hook.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
      // Claimed as it is sent: the start's read of the crossing back (and a later one) finds it sent.
      await eventually(async () => (await store.all('SELECT id FROM alert_claims')).length === 1, 20_000)
      expect((await killCall(again.url, 'sk-kill-aaaaaaaaaaaa-0004')).status).toBe(200)
      await eventually(async () => (await store.all('SELECT 1 FROM calls')).length === 2, 20_000)
      expect(await again.stop()).toBe(0)
      const third = await startBuiltServer(config, h.upstream.url, first.dataDir)
      again = third
      // A crossing of another key after that start's read of the meters is claimed after what the
      // start sends (what its file kept, a crossing it read back), and a webhook's alerts go in turn:
      // the webhook has it after any such one, and the first alert once.
      await eventually(async () => (await getJson(`${third.url}/api/health`)).body.calls_feed?.reads > 0, 20_000)
      const later = 'sk-kill-bbbbbbbbbbbb-0003'
      expect((await killCall(third.url, later)).status).toBe(200)
      await eventually(() => hook.got.some((g) => g.api_key_hash === hashKey(later)), 20_000)
      expect(sent()).toHaveLength(1)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 120_000)
})

describe('a claimed alert whose retry was waiting when its PostgreSQL instance was killed', () => {
  it('is sent by that start under its claim: refused to the last there, the claim is let go and the instance standing by sends it', async () => {
    const hook = await authHook()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const key = 'sk-kill-aaaaaaaaaaaa-0005'
    // A's password is stale; B's is the webhook's.
    const config = (retries: number) => ({
      timezone: 'UTC',
      pricing: { auto_update: false },
      storage: { url },
      alerts: { webhooks: [{ url: hook.url('old-5ecret'), format: 'json' }], backoff_ms: 60_000, retries },
      budgets: killBudgets,
    })
    const b = await pgBudgetServer(h, url, { timezone: 'UTC', budgets: killBudgets, alerts: { webhooks: [{ url: hook.url('new-5ecret'), format: 'json' }], retries: 0 } })
    const first = await startBuiltServer(config(3), h.upstream.url)
    let again: BuiltServer | null = null
    try {
      // A claims the crossing and is refused (401; its retry waits a minute); B, which lost the claim, stands by.
      expect((await killCall(first.url, key)).status).toBe(200)
      await eventually(() => hook.state.refused === 1, 20_000)
      await eventually(() => alertsOf(b.server.context).standingBy() === 1, 20_000)
      await first.kill('SIGKILL')
      // A again, with no retries: its attempt from the file is refused, its claim let go, and B sends it.
      again = await startBuiltServer(config(0), h.upstream.url, first.dataDir)
      await eventually(() => hook.got.length === 1, 30_000)
      expect(hook.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(key) })
      expect(hook.state.refused).toBe(2)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 120_000)
})
