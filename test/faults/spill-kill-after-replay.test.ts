import { readFileSync, statSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillFiles, writeSpill } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'
import { lockFromAnotherProcess } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A process killed (SIGKILL, power loss) after the start-up replay of a spill file committed its
 * calls and before it removed the file leaves both: the calls in the database and the file
 * unchanged. The next start must not record them again.
 */

let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

function sessions(file: string): string[] {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare('SELECT session FROM calls ORDER BY id').all() as { session: string }[]).map((r) => r.session)
  } finally {
    db.close()
  }
}

/** What the server counts: the rows, the dashboard's rollups, the in-memory spend the budgets read. */
async function counted(t: TestServer) {
  const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
  return { calls: sessions(t.dbFile), requests: summary.today_requests as number, spend: t.server.ledger.spend.totals().day }
}

describe('a kill between the replay of a spill file and its removal', () => {
  it('does not record the spilled calls a second time at the next start', async () => {
    const key = 'sk-spill-KILLAFTERREPLAY-00000001'
    const first = await startTestServer({}, upstream.url)
    const call = (session: string) =>
      postJson(`${first.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${key}`, 'x-burnrate-session': session })
    expect((await call('before')).status).toBe(200)
    await eventually(() => sessions(first.dbFile).length === 1)
    // The database cannot be written at the stop: the calls go to a spill file (the real code's).
    const lock = await lockFromAnotherProcess(first.dbFile)
    let file: string
    let bytes: Buffer
    try {
      for (const s of ['s1', 's2', 's3']) expect((await call(s)).status).toBe(200)
      await first.stop()
      const files = spillFiles(first.dir)
      expect(files).toHaveLength(1)
      file = files[0]
      bytes = readFileSync(file)
      // Each call carries its own key into the file.
      const keys = bytes.toString('utf8').trim().split('\n').map((l) => JSON.parse(l).call_key)
      expect(new Set(keys).size).toBe(3)
      expect(keys.every((k) => typeof k === 'string' && k.length > 0)).toBe(true)
    } finally {
      await lock.release()
    }

    // The next start replays the file: its calls are committed, and the file removed.
    const replayed = await startTestServer({}, upstream.url, first.dir)
    let once: Awaited<ReturnType<typeof counted>>
    try {
      expect(spillFiles(first.dir)).toEqual([])
      once = await counted(replayed)
      expect(once.calls).toEqual(['before', 's1', 's2', 's3'])
      expect(once.requests).toBe(4)
      expect(once.spend).toBeGreaterThan(0)
    } finally {
      await replayed.stop()
    }

    // Killed after that commit and before the removal: the file is still there, as it was.
    writeFileSync(file, bytes, { mode: 0o600 })
    expect(statSync(file).size).toBe(bytes.length)

    const again = await startTestServer({}, upstream.url, first.dir)
    try {
      expect(spillFiles(first.dir)).toEqual([])
      const twice = await counted(again)
      expect(twice.calls).toEqual(once.calls)
      expect(twice.requests).toBe(once.requests)
      expect(twice.spend).toBe(once.spend)
    } finally {
      await again.cleanup()
    }
  })

  it('does not either for a file written before spill files carried keys: its name and line key its calls', async () => {
    const first = await startTestServer({})
    await first.stop()
    const file = writeSpill(first.dir, ['old-1', 'old-2'].map((session) => makeCall({ ts: Date.now() - 1000, cost_usd: 0.5, session })))
    const bytes = readFileSync(file)
    expect(bytes.toString('utf8')).not.toContain('call_key')
    const replayed = await startTestServer({}, undefined, first.dir)
    let once: Awaited<ReturnType<typeof counted>>
    try {
      once = await counted(replayed)
      expect(once).toMatchObject({ calls: ['old-1', 'old-2'], requests: 2, spend: 1 })
    } finally {
      await replayed.stop()
    }
    writeFileSync(file, bytes, { mode: 0o600 })
    const again = await startTestServer({}, undefined, first.dir)
    try {
      expect(spillFiles(first.dir)).toEqual([])
      expect(await counted(again)).toEqual(once)
    } finally {
      await again.cleanup()
    }
  })
})
