import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An imported call the proxy's record superseded is no request of its key: when it was the key's
 * newest, the admin API's /api-keys still gave its time as the key's last_seen_at (and its tenant)
 * until a restart, which reads them from the calls still requests; a key with no call left stayed
 * listed. They are now those of the key's newest call left, as a restart reads them.
 */

const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())

let upstream: MockUpstream
const homes: string[] = []
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
})
afterAll(async () => {
  await upstream.close()
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

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
  const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, upstream.url)
  const { db, ledger } = t.server
  const home = mkdtempSync(join(tmpdir(), 'burnrate-superseded-last-seen-'))
  homes.push(home)
  mkdirSync(join(home, '.claude/projects/-home-dev-shop'), { recursive: true })
  writeFileSync(join(home, `.claude/projects/-home-dev-shop/${name}.jsonl`), transcript(name, older, newest))
  const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, budgets: () => t.server.context.budgets, settleMs: 0 })
  expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported: older === null ? 1 : 2 })
  await w.stop()
  ledger.flush()
  // Before: the imported calls are the keyless key's requests, the newest its last-seen time.
  expect(await keyless(t.url)).toMatchObject({ requests_month: older === null ? 1 : 2, last_seen_at: new Date(newest).toISOString() })
  const res = await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': `sk-ant-${name}-000000001` })
  expect(res.status).toBe(200)
  expect(await ledger.flushed()).toBe(true)
  await eventually(() => db.prepare("SELECT superseded_by FROM calls WHERE source = 'import' AND response_id = ?").pluck().get(BODY.id) !== null, 10_000)
  ledger.flush()
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
