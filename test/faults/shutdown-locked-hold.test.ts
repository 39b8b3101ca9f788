import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillFiles } from '../../src/main/reliability/spill'
import { type BuiltServer, lockFromAnotherProcess, startBuiltServer } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, type Responder, startMockUpstream } from '../support/mock-upstream'

// The built headless server (out/main/cli.js), stopped by signal while another process holds the
// SQLite file locked (BEGIN EXCLUSIVE), with a background job's budget hold not yet on disk. The
// hold must come back at the next start with the calls: before, the calls were spilled and the
// hold dropped (a first signal), or both lost (a second signal), and after the restart a second
// job was let past the $6 block rule the first one's hold had filled.

const answers: Answers = new Map()
const background = backgroundResponder(answers)
/** Background responses; `gpt-stall` (chat) answers its first bytes and then nothing, holding a stop open. */
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
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
  budgets: { rules: [{ api_key_pattern: 'sk-sighold-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-sighold-SIGNALHOLDSECRET-0001'

const job = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${KEY}` },
  )

/** The calls in the ledger file: their status and response id, oldest first. */
function ledgerCalls(dbFile: string): { status: number; response_id: string }[] {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT status, response_id FROM calls ORDER BY ts, id').all() as { status: number; response_id: string }[]
  } finally {
    db.close()
  }
}

/**
 * Restarts on `dir`: the spill file is replayed, the first job's hold is in force again (a third
 * job is refused with the contract's budget error), and every answered call is in the ledger.
 */
async function restartAndCheck(dir: string, first: string, cut: { status: number; response_id: string }[] = []): Promise<void> {
  const again = await startBuiltServer(CONFIG, upstream.url, dir)
  try {
    expect(spillFiles(dir)).toEqual([])
    // (The log is written as it goes: the restart can answer before its lines reach the file.)
    const recovered = new RegExp(`recovered ${2 + cut.length} call\\(s\\) and 2 other row\\(s\\) \\(budget holds, key patterns\\) kept in`)
    await eventually(() => recovered.test(readFileSync(again.logFile, 'utf8')), 10_000)
    const refused = await job(again.url, `${first}_c`)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
    expect(refused.json().error.message).toMatch(/could cost up to/)
    expect(await again.stop()).toBe(0)
    // The first job (answered), the second (refused), a call cut by the stop, and the third job (refused): none lost on the way.
    expect(ledgerCalls(again.dbFile)).toEqual([{ status: 200, response_id: first }, { status: 429, response_id: '' }, ...cut, { status: 429, response_id: '' }])
  } finally {
    await again.dispose()
  }
}

describe('the headless server stopped while the database is locked, a background job running', () => {
  it('on SIGTERM, keeps the job\'s budget hold with the calls: after the restart a second job is still refused', async () => {
    const server: BuiltServer = await startBuiltServer(CONFIG, upstream.url)
    try {
      const lock = await lockFromAnotherProcess(server.dbFile)
      try {
        expect((await job(server.url, 'resp_sig1_a')).status).toBe(200)
        // Before the stop too: the hold is in force.
        expect((await job(server.url, 'resp_sig1_b')).status).toBe(429)
        expect(await server.stop()).toBe(0)
      } finally {
        await lock.release()
      }
      const log = readFileSync(server.logFile, 'utf8')
      expect(log).toMatch(/database is locked\); 2 call\(s\) and 2 other row\(s\) \(budget holds, key patterns\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
      const files = spillFiles(server.dataDir)
      expect(files).toHaveLength(1)
      const text = readFileSync(files[0], 'utf8')
      expect(text).toContain('"hold"')
      expect(text).not.toContain('SIGNALHOLDSECRET')
      await restartAndCheck(server.dataDir, 'resp_sig1_a')
    } finally {
      await server.dispose()
    }
  })

  it('on a second SIGTERM (no waiting for calls under way), keeps the hold and the waiting calls too', async () => {
    const server: BuiltServer = await startBuiltServer(CONFIG, upstream.url)
    try {
      const lock = await lockFromAnotherProcess(server.dbFile)
      try {
        expect((await job(server.url, 'resp_sig2_a')).status).toBe(200)
        expect((await job(server.url, 'resp_sig2_b')).status).toBe(429)
        // A call under way (its answer stalls) keeps the first stop waiting; it is cut by the second.
        const stalled = postJson(`${server.url}/v1/chat/completions`, { model: 'gpt-stall' }).catch(() => null)
        await eventually(() => upstream.requests.some((r) => r.body.toString().includes('gpt-stall')))
        server.child.kill('SIGTERM')
        await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
        expect(await server.stop()).toBe(1)
        await stalled
      } finally {
        await lock.release()
      }
      const log = readFileSync(server.logFile, 'utf8')
      expect(log).toContain('SIGTERM again: exiting without waiting')
      // The stalled call too, cut by the second signal (builds before this one lost it).
      expect(log).toMatch(/database is locked\); 3 call\(s\) and 2 other row\(s\) \(budget holds, key patterns\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
      expect(spillFiles(server.dataDir)).toHaveLength(1)
      await restartAndCheck(server.dataDir, 'resp_sig2_a', [{ status: 503, response_id: '' }])
    } finally {
      await server.dispose()
    }
  })
})
