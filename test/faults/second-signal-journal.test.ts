import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillFiles } from '../../src/main/reliability/spill'
import { type BuiltServer, lockFromAnotherProcess, startBuiltServer } from '../load/harness'
import { type Answers, backgroundBody, backgroundResponder } from '../providers/background-support'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, type Responder, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * SQLite, the built headless server (out/main/cli.js): while another process held the file locked,
 * a background job's budget hold went to the spill journal with its call; the job then ended (its
 * hold let go). A second signal (Ctrl-C twice) once the file was free again stored everything in
 * its last flush and exited at once, the journal's removal not yet done: the journal stayed in the
 * data folder, and the next start replayed it, its calls found stored and its side rows (the hold)
 * written again after what had followed them. The forced exit now waits for the journal's file
 * work, as a clean stop does: nothing is left to be applied twice.
 */

const answers: Answers = new Map()
const background = backgroundResponder(answers)
/** Background responses; `gpt-stall` (chat) answers its first bytes and then nothing, holding a first stop open. */
const responder: Responder = (req) =>
  req.method === 'POST' && req.url.startsWith('/v1/chat/completions')
    ? { status: 200, headers: { 'content-type': 'application/json' }, chunks: [Buffer.from('{"id":'), Buffer.from('"x"}')], stallAfterChunks: 1 }
    : background(req)
let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(responder)
})
afterAll(async () => {
  await upstream.close()
})

const CONFIG = {
  timezone: 'UTC',
  pricing: { auto_update: false },
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first is held.
  budgets: { rules: [{ api_key_pattern: 'sk-twicejournal-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-twicejournal-SECRET-0001'
const auth = { authorization: `Bearer ${KEY}` }

const job = (url: string, id: string) =>
  postJson(`${url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } }, auth)

/** The side rows (`{"side": …}` lines) the data folder's spill files hold. */
function spilledSide(dir: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (const f of spillFiles(dir)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      try {
        const r = JSON.parse(line)
        if (r && typeof r.side === 'object') out.push(r.side)
      } catch {}
    }
  }
  return out
}

function stored(dbFile: string) {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return {
      calls: db.prepare('SELECT status FROM calls ORDER BY ts, id').pluck().all(),
      holds: db.prepare('SELECT response_id FROM background_holds').pluck().all(),
    }
  } finally {
    db.close()
  }
}

describe('a second signal once the locked SQLite file is free again', () => {
  it('in process: the exit without waiting resolves once the journal of what its flush stored is gone', async () => {
    const t = await startTestServer(CONFIG, upstream.url)
    // Held on a connection of this process: let go and the exit begun in the same turn, no timer of the ledger's between.
    const locker = new Database(t.dbFile)
    let locked = false
    try {
      locker.exec('BEGIN EXCLUSIVE')
      locked = true
      expect((await job(t.url, 'resp_twice_in')).status).toBe(200)
      await eventually(() => spilledSide(t.dir).some((w) => 'hold' in w), 20_000)
      locker.exec('COMMIT')
      locked = false
      // What an exit runs before it ends the process (src/main/headless.ts): once it resolves, the
      // data folder holds what the next start reads.
      await t.server.keepPending()
      expect(spillFiles(t.dir)).toEqual([])
      expect(stored(t.dbFile)).toEqual({ calls: [200], holds: ['resp_twice_in'] })
    } finally {
      if (locked) locker.exec('COMMIT')
      locker.close()
      await t.cleanup()
    }
  }, 60_000)

  it('stores what waited and leaves no journal behind to be replayed at the next start', async () => {
    const first: BuiltServer = await startBuiltServer(CONFIG, upstream.url)
    let again: BuiltServer | null = null
    try {
      const lock = await lockFromAnotherProcess(first.dbFile)
      let locked = true
      try {
        expect((await job(first.url, 'resp_twice_a')).status).toBe(200)
        // The hold and its call are in the journal (a kill now would leave them for the next start).
        await eventually(() => spilledSide(first.dataDir).some((w) => 'hold' in w), 20_000)
        // The job failed (nothing billed): its hold is let go (a row waiting with the calls, the file still locked).
        answers.set('resp_twice_a', backgroundBody('resp_twice_a', 'cancelled', null))
        expect((await postJson(`${first.url}/v1/responses/resp_twice_a/cancel`, {}, auth)).status).toBe(200)
        await eventually(() => spilledSide(first.dataDir).some((w) => 'unhold' in w), 5_000)
        // A call under way (its answer stalls) keeps the first stop waiting; the second signal cuts it.
        const stalled = postJson(`${first.url}/v1/chat/completions`, { model: 'gpt-stall' }, auth).catch(() => null)
        await eventually(() => upstream.requests.some((r) => r.body.toString().includes('gpt-stall')))
        first.child.kill('SIGTERM')
        await eventually(() => readFileSync(first.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
        await lock.release()
        locked = false
        expect(await first.stop()).toBe(1)
        await stalled
      } finally {
        if (locked) await lock.release()
      }
      expect(readFileSync(first.logFile, 'utf8')).toContain('SIGTERM again: exiting without waiting')
      // Everything is stored (the job, its end, the call cut by the signal); the hold is gone.
      expect(stored(first.dbFile)).toEqual({ calls: [200, 200, 503], holds: [] })
      // Nothing is left for the next start to apply again.
      expect(spillFiles(first.dataDir)).toEqual([])
      again = await startBuiltServer(CONFIG, upstream.url, first.dataDir)
      // The first job's hold stays let go: a second job fits the rule.
      expect((await job(again.url, 'resp_twice_b')).status).toBe(200)
      expect(await again.stop()).toBe(0)
      expect(stored(first.dbFile)).toEqual({ calls: [200, 200, 503, 200], holds: ['resp_twice_b'] })
      expect(readFileSync(again.logFile, 'utf8')).not.toMatch(/already recorded|recovered/)
    } finally {
      if (again) await again.dispose()
      else await first.dispose()
    }
  }, 90_000)
})
