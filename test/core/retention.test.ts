import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { parseConfigText } from '../../src/main/config/load'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { importLogs } from '../../src/main/import/importer'
import { RetentionPruner, prunedBefore, pruneCalls, retentionCutoff } from '../../src/main/ledger/retention'
import { markRevised } from '../../src/main/ledger/revisions'
import { Pricer } from '../../src/main/pricing/price'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { Batcher } from '../../src/main/team/batcher'
import { getJson, makeCall, rng } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

const DAY = 86_400_000
const WORKER = resolve(__dirname, '../../out/main/ledger-worker.js')
const ROLLUPS = ['dash_5m', 'dash_hour', 'dash_day', 'dash_dim_hour', 'dash_dim_day', 'dash_session']

const cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** `old` calls 60 to 400 days old and `recent` ones in the last 20 days, varied attributes. */
function calls(now: number, old: number, recent: number, seed = 7): CallRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]
  const out: CallRecord[] = []
  for (let i = 0; i < old + recent; i++) {
    const ago = i < old ? 60 * DAY + Math.floor(r() * 340 * DAY) : 60_000 + Math.floor(r() * 20 * DAY)
    out.push(
      makeCall({
        ts: now - ago,
        model: pick(['gpt-4o-mini', 'gpt-5', 'o3']),
        tenant: pick(['', 'acme', 'globex']),
        agent: pick(['', 'codex', 'aider']),
        // (old calls in sessions idle since: a session still in use keeps its calls, see below)
        session: i < old ? pick(['', 'old-1', 'old-2']) : pick(['', 's-1', 's-2', 's-3']),
        project: pick(['', '/src/a', '/src/b']),
        billing: r() < 0.1 ? 'subscription' : 'api',
        status: pick([200, 200, 200, 429, 500]),
        input_tokens: Math.floor(r() * 5000),
        output_tokens: Math.floor(r() * 900),
        cost_usd: r() * 0.05,
        latency_ms: 10 + r() * 3000,
      }),
    )
  }
  return out.sort((a, b) => a.ts - b.ts)
}

/** A ledger file holding `rows`, written the way the server writes (batches, rollups in the same transaction). */
function ledgerWith(rows: CallRecord[], dir = mkdtempSync(join(tmpdir(), 'burnrate-retention-'))) {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, DB_FILE)
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
  const writer = new RollupWriter(db)
  ledger.onBatch((b) => writer.onBatch(b))
  for (let i = 0; i < rows.length; i += 500) {
    for (const c of rows.slice(i, i + 500)) ledger.record(c)
    ledger.flush()
  }
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return { dir, file, db, ledger }
}

/** A rollup's rows; a session's but what retention adds to it (how many of its requests it pruned). */
function snapshot(db: Database.Database, table: string): unknown[] {
  const cols = table === 'dash_session' ? 'tenant, agent, session, first_ts, last_ts, requests, cost_usd' : '*'
  return db.prepare(`SELECT ${cols} FROM ${table} ORDER BY 1, 2, 3, 4`).all()
}

describe('ledger.retention_days', () => {
  it('is off by default, and refuses fewer days than budgets and the dashboard read raw calls for', () => {
    expect(parseConfigText('{}', 'c.yaml').ledger.retention_days).toBeNull()
    expect(parseConfigText('ledger: { retention_days: 90 }', 'c.yaml').ledger.retention_days).toBe(90)
    expect(() => parseConfigText('ledger: { retention_days: 7 }', 'c.yaml')).toThrow(/retention_days/)
    expect(() => parseConfigText('ledger: { retention_days: 40.5 }', 'c.yaml')).toThrow(/retention_days/)
  })

  it('prunes old calls in bounded steps that yield, keeping every rollup row and every recent call as it was', async () => {
    const now = Date.now()
    const { db, ledger } = ledgerWith(calls(now, 1500, 400))
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    const cutoff = retentionCutoff(40, now)
    const old = db.prepare('SELECT count(*) FROM calls WHERE ts < ?').pluck().get(cutoff) as number
    expect(old).toBe(1500)
    const named = db.prepare("SELECT tenant, agent, session, count(*) AS n FROM calls WHERE ts < ? AND session <> '' AND superseded_by IS NULL GROUP BY 1, 2, 3").all(cutoff)
    expect(named.length).toBeGreaterThan(0)
    const before = Object.fromEntries(ROLLUPS.map((t) => [t, snapshot(db, t)]))
    const recent = db.prepare('SELECT * FROM calls WHERE ts >= ? ORDER BY id').all(cutoff)

    const events: string[] = []
    let ticking = true
    const tick = () => {
      if (!ticking) return
      if (events[events.length - 1] !== 'tick') events.push('tick')
      setImmediate(tick)
    }
    setImmediate(tick)
    const steps: number[] = []
    const pruner = new RetentionPruner({
      days: 40,
      batch: 200,
      busyDelayMs: 0,
      idleDelayMs: 3_600_000,
      now: () => now,
      prune: async (b, limit) => {
        const n = await ledger.prune(b, limit)
        steps.push(n)
        events.push('step')
        return n
      },
    }).start()
    cleanups.push(() => pruner.stop())
    await eventually(() => pruner.deleted === 1500, 20_000)
    ticking = false
    await pruner.stop()

    // Each step deleted at most a batch, and the event loop ran between steps.
    expect(steps.every((n) => n <= 200)).toBe(true)
    expect(steps.length).toBeGreaterThanOrEqual(8)
    const firstStep = events.indexOf('step')
    const lastStep = events.lastIndexOf('step')
    expect(events.slice(firstStep, lastStep).filter((e) => e === 'tick').length).toBeGreaterThanOrEqual(steps.length - 2)

    expect(db.prepare('SELECT count(*) FROM calls WHERE ts < ?').pluck().get(cutoff)).toBe(0)
    expect(db.prepare('SELECT * FROM calls WHERE ts >= ? ORDER BY id').all(cutoff)).toEqual(recent)
    for (const t of ROLLUPS) expect(snapshot(db, t), t).toEqual(before[t])
    // Each session's row counts the requests pruned of it.
    expect(db.prepare('SELECT tenant, agent, session, pruned_requests AS n FROM dash_session WHERE pruned_requests > 0 ORDER BY 1, 2, 3').all()).toEqual(named)
  })

  it('never deletes calls the rollups do not include yet, nor the newest call (ids are never handed out again)', () => {
    const now = Date.now()
    const { db, ledger } = ledgerWith(calls(now, 300, 0))
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    const maxId = db.prepare('SELECT max(id) FROM calls').pluck().get() as number
    db.prepare('UPDATE dash_state SET last_call_id = ?').run(maxId - 100)
    expect(pruneCalls(db, now, 1000)).toBe(200)
    db.prepare('UPDATE dash_state SET last_call_id = ?').run(maxId)
    expect(pruneCalls(db, now, 1000)).toBe(99)
    expect(db.prepare('SELECT id FROM calls').pluck().all()).toEqual([maxId])
    expect(pruneCalls(db, now, 1000)).toBe(0)
  })

  it('keeps the call with the highest revision, so a later revision is numbered above what the team sender sent', async () => {
    const now = Date.now()
    const { db, ledger } = ledgerWith([
      ...[40, 40, 39, 39].map((d) => makeCall({ ts: now - d * DAY, cost_usd: 0.01 })),
      makeCall({ ts: now - DAY, cost_usd: 0.01 }),
    ])
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    const store = new SqliteStore(db)
    // Old calls re-priced twice (two price changes over the last 45 days): revisions 1, then 2 for three of them.
    await markRevised(store, [1, 2])
    await markRevised(store, [2, 3, 4])
    const batcher = new Batcher(db)
    // The team sender sends them again; its cursor moves to (2, 4).
    const sent = batcher.revised({ revision: 0, id: 0 }, 5, 100)
    expect(sent.calls.map((c) => c.id)).toEqual([1, 2, 3, 4])
    // Retention prunes the old calls but one of the highest revision (one: a re-price of every
    // call numbers them all alike, and retention must still prune them).
    expect(pruneCalls(db, now - 32 * DAY, 500)).toBe(3)
    expect(db.prepare('SELECT id FROM calls ORDER BY id').pluck().all()).toEqual([4, 5])
    // A recent call re-priced later is sent again, its revision above the cursor's.
    await markRevised(store, [5])
    expect(batcher.revised(sent.last, 5, 100).calls.map((c) => [c.id, c.revision])).toEqual([[5, 3]])
    // Once a later revision exists, the kept one may go.
    expect(pruneCalls(db, now - 32 * DAY, 500)).toBe(1)
  })

  it('prunes on the write thread when the ledger writes there', async () => {
    if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: resolve(__dirname, '../..'), stdio: 'ignore' })
    const now = Date.now()
    const { dir, ledger: first, db: firstDb } = ledgerWith(calls(now, 500, 50))
    first.close()
    firstDb.close()
    const db = openDatabase(join(dir, DB_FILE))
    const ledger = new Ledger(db, { flushIntervalMs: 20, maxPending: 100_000, timezone: 'UTC', writeThread: WORKER })
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    await eventually(() => ledger.writesOnThread)
    expect(await ledger.prune(retentionCutoff(40, now), 120)).toBe(120)
    expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(430)
  })

  it('the server prunes calls past ledger.retention_days in the background; the dashboard answers as before', async () => {
    const now = Date.now()
    const { dir, ledger, db } = ledgerWith(calls(now, 2500, 600, 11))
    ledger.close()
    db.close()
    const t: TestServer = await startTestServer({ ledger: { retention_days: 40 }, timezone: 'UTC' }, undefined, dir)
    cleanups.push(() => t.stop())
    const paths = ['costs?group_by=model&range=30d', 'costs?group_by=project&range=30d', 'timeseries?range=30d', 'stats?range=30d', 'sessions', 'summary']
    const answers = async () => Promise.all(paths.map(async (p) => (await getJson(`${t.url}/api/dashboard/${p}`)).body))
    const before = await answers()
    const count = () => t.server.db.prepare('SELECT count(*) FROM calls WHERE ts < ?').pluck().get(retentionCutoff(40, Date.now())) as number
    expect(count()).toBe(2500)
    await eventually(() => count() === 0, 30_000)
    expect(t.server.db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(600)
    const after = await answers()
    // Active-session flags and "now" move with the clock; everything else is equal.
    for (const [i, p] of paths.entries()) if (!p.startsWith('sessions') && !p.startsWith('summary')) expect(after[i], p).toEqual(before[i])
  })

  it('an agent log older than what was pruned is not imported (its proxied twin is gone; the rollups count it)', async () => {
    // The Claude Code fixture's three calls are from 2026-11-20 and 21.
    const logged = Date.UTC(2026, 10, 21, 12)
    const { dir, db, ledger } = ledgerWith([makeCall({ ts: logged - 400 * DAY }), makeCall({ ts: logged + 2 * DAY }), makeCall({ ts: logged + 3 * DAY })])
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    const logs = join(dir, 'logs')
    cpSync(resolve(__dirname, '../fixtures/agent-logs/claude-code/projects'), logs, { recursive: true })
    expect(prunedBefore(db)).toBe(0)
    expect(pruneCalls(db, logged + DAY, 100)).toBe(1)
    expect(prunedBefore(db)).toBe(logged + DAY)
    const s = await importLogs(db, { agent: 'claude-code', paths: [logs], pricer: new Pricer(), now: logged + 4 * DAY })
    expect(s).toMatchObject({ imported: 0, expired: 4 })
    expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import'").pluck().get()).toBe(0)
  })

  it('nor one logged just after what was pruned, whose proxied twin (stamped when it arrived) was pruned', async () => {
    const T = Date.UTC(2026, 8, 1, 10)
    const twin = { ts: T, provider: 'anthropic', model: 'claude-sonnet-4-5', endpoint: 'messages', agent: 'claude-code', input_tokens: 1000, output_tokens: 200, cost_usd: 0.05, response_id: 'msg_A' }
    const { dir, db, ledger } = ledgerWith([makeCall(twin), makeCall({ ts: T + 40 * DAY })])
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    // Claude Code logs the answer once it is in, 20 s after the proxy stamped the call; retention pruned before a moment between.
    const logs = join(dir, 'logs')
    mkdirSync(join(logs, 'p'), { recursive: true })
    const line = { type: 'assistant', timestamp: new Date(T + 20_000).toISOString(), sessionId: 's', cwd: '/p', uuid: 'u1', requestId: 'r1', message: { id: 'msg_A', model: 'claude-sonnet-4-5', role: 'assistant', usage: { input_tokens: 1000, output_tokens: 200 } } }
    writeFileSync(join(logs, 'p/s.jsonl'), `${JSON.stringify(line)}\n`)
    expect(pruneCalls(db, T + 10_000, 100)).toBe(1)
    const s = await importLogs(db, { agent: 'claude-code', paths: [logs], pricer: new Pricer(), now: T + 41 * DAY })
    expect(s).toMatchObject({ imported: 0, expired: 1 })
    expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import'").pluck().get()).toBe(0)
    // The day's rollup counts the call once: the proxied one.
    expect(db.prepare('SELECT sum(requests) FROM dash_day WHERE cost_usd > 0.04').pluck().get()).toBe(1)
  })
})
