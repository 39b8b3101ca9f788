import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { dashboard } from '../../src/main/dashboard'
import { createLogger } from '../../src/main/log'
import { spillFiles } from '../../src/main/reliability/spill'
import { FEATURES } from '../../src/main/server/server'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_COST, NANO_FIXTURE, chat } from '../budgets/support'
import { lockFromAnotherProcess } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// Stopped while another process held the SQLite file's write lock, Burnrate keeps its calls and
// its budget holds in a spill file, written at the next start. When the file is STILL locked at
// that start, the calls and holds stayed in the file: the budget meters (read from the database)
// did not see the spend, nor the hold of a background job still running, and a block rule let a
// call through that the spend already there should have refused. Once the lock went, the file
// waited for yet another restart.

const answers: Answers = new Map()
const background = backgroundResponder(answers)
const nano = fixture(NANO_FIXTURE)
let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream((req) =>
    req.method === 'POST' && req.url.startsWith('/v1/chat/completions')
      ? { status: 200, headers: { 'content-type': 'application/json' }, body: nano }
      : background(req),
  )
})
afterAll(async () => {
  await upstream.close()
})

const CONFIG = {
  timezone: 'UTC',
  budgets: {
    rules: [
      // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
      { api_key_pattern: 'sk-stilljob-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' },
      // Just above one call: the first goes through, the second finds the limit reached.
      { api_key_pattern: 'sk-stillspend-*', daily_limit_usd: NANO_COST * 0.75, action: 'block' },
    ],
  },
}
const JOB_KEY = 'sk-stilljob-STILLLOCKED-0001'
const SPEND_KEY = 'sk-stillspend-STILLLOCKED-0002'

const job = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${JOB_KEY}` },
  )

/** The calls in the ledger file, by key hash: status and response id, oldest first. */
function ledgerCalls(dbFile: string, key: string): { status: number; response_id: string }[] {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT status, response_id FROM calls WHERE api_key_hash = ? ORDER BY ts, id').all(hashKey(key)) as { status: number; response_id: string }[]
  } finally {
    db.close()
  }
}

/**
 * Another process holding the file's write lock (BEGIN EXCLUSIVE) until `marker` exists: the test
 * creates it once the start-up's write of the spill file has given up, while the start goes on.
 */
async function lockUntil(dbFile: string, marker: string): Promise<{ released: Promise<void> }> {
  const script = `
    const fs = require('node:fs')
    const Database = require('better-sqlite3')
    const db = new Database(${JSON.stringify(dbFile)})
    db.exec('BEGIN EXCLUSIVE')
    process.stdout.write('locked\\n')
    const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(marker)})) { clearInterval(t); db.exec('COMMIT'); db.close() } }, 10)
  `
  const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] })
  const released = new Promise<void>((ok) => child.once('exit', () => ok()))
  await new Promise<void>((ok, fail) => {
    child.stdout!.once('data', () => ok())
    child.once('exit', (code) => fail(new Error(`locker exited with ${code}`)))
  })
  return { released }
}

/** A first server that spent under both rules while the file was locked, and stopped: its calls and the job's hold are in a spill file. */
async function spilled(): Promise<string> {
  const first = await startTestServer(CONFIG, upstream.url, undefined, { create: { startupBusyMs: 300 } })
  const lock = await lockFromAnotherProcess(first.dbFile)
  try {
    expect((await job(first.url, 'resp_still_a')).status).toBe(200)
    expect((await chat(first, SPEND_KEY)).status).toBe(200)
    await first.stop()
  } finally {
    await lock.release()
  }
  expect(spillFiles(first.dir)).toHaveLength(1)
  return first.dir
}

/** The job's hold and the call's spend count: a second job and a second call are refused. */
async function refusesBoth(t: TestServer, id: string): Promise<void> {
  const refusedJob = await job(t.url, id)
  expect(refusedJob.status).toBe(429)
  expect(refusedJob.json().error).toMatchObject({ type: 'budget_exceeded' })
  expect(refusedJob.json().error.message).toMatch(/could cost up to/)
  const refused = await chat(t, SPEND_KEY)
  expect(refused.status).toBe(429)
  expect(refused.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', spent_usd: NANO_COST })
}

/** Each spilled call is in the ledger once, before the calls refused since. */
async function storedOnce(t: TestServer, refusedCalls: number): Promise<void> {
  expect(await t.server.ledger.flushed()).toBe(true)
  const dbFile = t.dbFile
  expect(ledgerCalls(dbFile, SPEND_KEY).map((c) => c.status)).toEqual([200, ...Array(refusedCalls).fill(429)])
  expect(ledgerCalls(dbFile, JOB_KEY)).toEqual([{ status: 200, response_id: 'resp_still_a' }, ...Array(refusedCalls).fill({ status: 429, response_id: '' })])
}

describe('a restart while the database is still locked, after a stop that spilled calls and a budget hold', () => {
  it('the lock going only after the spill file was given up: the file is written as soon as it can be, its spend and hold count', async () => {
    const dir = await spilled()
    const marker = join(dir, 'give-up-seen')
    const lock = await lockUntil(join(dir, 'burnrate.db'), marker)
    const log = createLogger('info', (l) => {
      if (l.includes('still cannot be written')) writeFileSync(marker, '')
    })
    const t = await startTestServer(CONFIG, upstream.url, dir, { log, create: { startupBusyMs: 5000 } })
    try {
      await lock.released
      await refusesBoth(t, 'resp_still_b')
      await eventually(() => spillFiles(dir).length === 0)
      await storedOnce(t, 1)
      const again = await t.restart()
      await refusesBoth(again, 'resp_still_c')
      await storedOnce(again, 2)
      await again.cleanup()
    } finally {
      await t.cleanup()
    }
  })

  it('locked for the whole start: the spend and hold count while they wait, and are written once when the lock goes', async () => {
    const dir = await spilled()
    const lock = await lockFromAnotherProcess(join(dir, 'burnrate.db'))
    let released = false
    // The features that start without writing the file (the dashboard's rollups need a write at start).
    const features = FEATURES.slice(0, FEATURES.indexOf(dashboard))
    const t = await startTestServer(CONFIG, upstream.url, dir, { create: { startupBusyMs: 300, features } })
    try {
      expect(spillFiles(dir)).toHaveLength(1)
      await refusesBoth(t, 'resp_still_b')
      await lock.release()
      released = true
      // The lock gone: the file's calls and hold are written, then the calls refused meanwhile.
      await eventually(() => spillFiles(dir).length === 0)
      await eventually(() => t.server.ledger.status.pending === 0)
      await storedOnce(t, 1)
      // Rebuilt from the database now (as at a rule change): counted once, not from memory too.
      budgetsOf(t.server.context).engine.reload()
      expect(t.server.ledger.spend.key(hashKey(SPEND_KEY)).day).toBe(NANO_COST)
      await refusesBoth(t, 'resp_still_c')
      const again = await t.restart()
      await refusesBoth(again, 'resp_still_d')
      await storedOnce(again, 3)
      await again.cleanup()
    } finally {
      if (!released) await lock.release()
      await t.cleanup()
    }
  })
})
