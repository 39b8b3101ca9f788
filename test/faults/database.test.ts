import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { configSchema } from '../../src/main/config/schema'
import { silentLogger } from '../../src/main/log'
import { StartupError, createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { ROOT, lockFromAnotherProcess } from '../load/harness'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { canMount, mountTmpfs, unmount } from '../support/tmpfs'

/**
 * The database cannot be written (locked by another process, full, read-only): calls keep
 * flowing, records wait in memory up to `ledger.max_pending`, the problem shows in
 * /api/health, and everything held is written once the database recovers.
 */

let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
})
afterAll(async () => {
  await upstream.close()
})

function countRows(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n
  } finally {
    db.close()
  }
}

async function calls(t: TestServer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-db-fault-000000001' })
    expect(res.status).toBe(200)
  }
}

async function health(t: TestServer): Promise<any> {
  const res = await request(`${t.url}/api/health`)
  expect(res.status).toBe(200)
  return res.json()
}

describe('a database locked by another process', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
  })

  it('keeps calls flowing, reports it in /api/health, and writes every held call once the lock is gone', async () => {
    await calls(t, 3)
    await eventually(() => countRows(t.dbFile) === 3)
    const lock = await lockFromAnotherProcess(t.dbFile)
    try {
      await calls(t, 20)
      const h = await eventually(async () => {
        const x = await health(t)
        return x.ledger.writable === false ? x : undefined
      })
      expect(h.status).toBe('degraded')
      expect(h.ledger.pending).toBe(20)
      expect(h.ledger.dropped).toBe(0)
      expect(h.ledger.last_error).toMatch(/SQLITE_BUSY|locked/i)
      // Spend is counted in memory all along, so budgets keep working.
      expect(t.server.ledger.spend.totals().day).toBeGreaterThan(0)
    } finally {
      await lock.release()
    }
    await eventually(() => countRows(t.dbFile) === 23)
    const h = await eventually(async () => {
      const x = await health(t)
      return x.status === 'ok' ? x : undefined
    }, 10_000)
    expect(h.ledger).toMatchObject({ writable: true, pending: 0, dropped: 0, last_error: null })
  })
})

describe('held calls are bounded by ledger.max_pending', () => {
  it('keeps the newest max_pending calls, counts the dropped ones, and says so', async () => {
    const t = await startTestServer({ ledger: { max_pending: 5 } }, upstream.url)
    try {
      const lock = await lockFromAnotherProcess(t.dbFile)
      try {
        await calls(t, 8)
        const h = await eventually(async () => {
          const x = await health(t)
          return x.ledger.writable === false && x.ledger.pending === 5 ? x : undefined
        })
        // Those the journal held already are on disk, not dropped (test/faults/journal-left-memory.test.ts).
        expect(h.ledger.dropped + h.ledger.left_on_disk).toBe(3)
      } finally {
        await lock.release()
      }
      await eventually(() => countRows(t.dbFile) === 5)
    } finally {
      await t.cleanup()
    }
  })
})

describe('a full database', () => {
  it('keeps calls flowing while SQLite reports SQLITE_FULL, and writes them when space is back', async () => {
    const t = await startTestServer({}, upstream.url)
    try {
      await calls(t, 1)
      await eventually(() => countRows(t.dbFile) === 1)
      // No room for a single page more: every write now fails with "database or disk is full".
      const db = t.server.db
      const pages = db.pragma('page_count', { simple: true }) as number
      db.pragma('wal_checkpoint(TRUNCATE)')
      db.pragma(`max_page_count = ${pages}`)
      await calls(t, 200)
      const h = await eventually(async () => {
        const x = await health(t)
        return x.ledger.writable === false ? x : undefined
      })
      expect(h.ledger.last_error).toMatch(/SQLITE_FULL|full/i)
      expect(h.ledger.pending).toBeGreaterThan(0)
      db.pragma('max_page_count = 1073741823')
      await eventually(() => countRows(t.dbFile) === 201)
      expect((await health(t)).status).toBe('ok')
    } finally {
      await t.cleanup()
    }
  })
})

describe.skipIf(!canMount)('a real filesystem that fills up (a 2 MB tmpfs; needs root)', () => {
  let mount: string
  let t: TestServer
  beforeAll(async () => {
    mount = mountTmpfs(2048)!
    const dataDir = join(mount, 'data')
    mkdirSync(dataDir)
    t = await startTestServer({}, upstream.url, dataDir)
  })
  afterAll(async () => {
    await t.stop().catch(() => {})
    unmount(mount)
  })

  it('the disk fills up: calls keep flowing, health says so, and nothing is lost once space is freed', async () => {
    await calls(t, 2)
    await eventually(() => countRows(t.dbFile) === 2)
    // Fill every remaining byte of the filesystem.
    const filler = join(mount, 'filler')
    const block = Buffer.alloc(4096, 1)
    let written = 0
    for (;;) {
      try {
        writeFileSync(filler, block, { flag: 'a' })
        written++
      } catch {
        break
      }
    }
    expect(written).toBeGreaterThan(0)
    await calls(t, 300)
    const h = await eventually(async () => {
      const x = await health(t)
      return x.ledger.writable === false ? x : undefined
    }, 5000)
    expect(h.status).toBe('degraded')
    expect(h.ledger.last_error).toMatch(/FULL|IOERR|full|space/i)
    rmSync(filler)
    await eventually(() => countRows(t.dbFile) === 302)
    expect((await health(t)).ledger).toMatchObject({ writable: true, pending: 0, dropped: 0 })
  })

})

describe('a database that turns read-only', () => {
  it('keeps calls flowing while SQLite refuses writes, and writes them once it accepts them again', async () => {
    // A mounted filesystem cannot be made read-only under open files (the kernel answers EBUSY),
    // so the server's own connection is switched to read-only: every write fails with SQLITE_READONLY.
    const t = await startTestServer({}, upstream.url)
    try {
      await calls(t, 1)
      await eventually(() => countRows(t.dbFile) === 1)
      t.server.db.pragma('query_only = 1')
      await calls(t, 50)
      const h = await eventually(async () => {
        const x = await health(t)
        return x.ledger.writable === false ? x : undefined
      })
      expect(h.ledger.last_error).toMatch(/READONLY|readonly/i)
      expect(h.ledger.pending).toBe(50)
      t.server.db.pragma('query_only = 0')
      await eventually(() => countRows(t.dbFile) === 51)
      expect((await health(t)).ledger).toMatchObject({ writable: true, pending: 0, dropped: 0 })
    } finally {
      await t.cleanup()
    }
  })
})

describe('a data folder that cannot be written at start-up', () => {
  function configFor(dataDir: string) {
    const parsed = configSchema.parse({ server: { port: 0 } })
    return { ...parsed, data_dir: dataDir, timezone: 'UTC', source: null }
  }

  it('is a start-up error that names the folder and says what to do, not a crash', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-notdir-'))
    try {
      const file = join(dir, 'a-file')
      writeFileSync(file, 'x')
      expect(() => createBurnrate(configFor(join(file, 'data')), { log: silentLogger })).toThrow(StartupError)
      expect(() => createBurnrate(configFor(join(file, 'data')), { log: silentLogger })).toThrow(/a-file.*--data-dir/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.skipIf(!canMount)('on a read-only filesystem too (tmpfs mounted read-only; needs root)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-rofs-'))
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,ro', 'tmpfs', dir], { stdio: 'ignore' })
      expect(() => createBurnrate(configFor(join(dir, 'data')), { log: silentLogger })).toThrow(/cannot open the database.*writable/)
    } finally {
      unmount(dir)
    }
  })
})

/**
 * Another process writes the file as the server starts (`burnrate import`, a backup tool):
 * the start-up writes (migrations, the dashboard's catch-up) wait for its lock rather than crash
 * the server; past the start-up wait, a start-up error says what holds it.
 */
describe('a database another process is writing at start-up', () => {
  /** Takes the write lock in another process; it lets go by itself after `holdMs` (this process may be busy starting a server meanwhile). */
  async function lockFor(file: string, holdMs: number): Promise<{ released: Promise<number> }> {
    const script = `
      const Database = require('better-sqlite3')
      const db = new Database(${JSON.stringify(file)})
      db.exec('BEGIN IMMEDIATE')
      process.stdout.write('locked\\n')
      setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released ' + Date.now() + '\\n') }, ${holdMs})
    `
    const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    const released = new Promise<number>((ok, fail) => {
      child.stdout!.on('data', (d) => {
        out += d
        const m = /released (\d+)/.exec(out)
        if (m) ok(Number(m[1]))
      })
      child.once('exit', (code) => (/released/.test(out) ? undefined : fail(new Error(`locker exited with ${code}: ${out}`))))
    })
    await new Promise<void>((ok, fail) => {
      child.stdout!.on('data', () => /locked/.test(out) && ok())
      child.once('exit', (code) => fail(new Error(`locker exited with ${code}`)))
    })
    return { released }
  }

  it('waits for the lock, then starts and serves', async () => {
    const first = await startTestServer({}, upstream.url)
    await first.stop()
    const { released } = await lockFor(first.dbFile, 1500)
    // createBurnrate is synchronous: the lock is let go while it waits in SQLite's busy handler.
    const t = await first.restart()
    const startedAt = Date.now()
    try {
      expect(startedAt).toBeGreaterThanOrEqual(await released)
      await calls(t, 1)
      await eventually(() => countRows(t.dbFile) === 1 || undefined)
    } finally {
      await t.cleanup()
    }
  })

  it('past the start-up wait, is a start-up error naming the file and what holds it, and leaves the folder free', async () => {
    const first = await startTestServer({}, upstream.url)
    await first.stop()
    const locker = await lockFromAnotherProcess(first.dbFile)
    const config = loadConfig({ config: first.configFile, dataDir: first.dir }, {})
    try {
      expect(() => createBurnrate(config, { log: silentLogger, startupBusyMs: 200, idleCollection: false })).toThrow(StartupError)
      expect(() => createBurnrate(config, { log: silentLogger, startupBusyMs: 200, idleCollection: false })).toThrow(
        `the database ${first.dbFile} stayed locked by another process for 200 ms (a \`burnrate import\`, or another program writing it); start Burnrate again once it is done`,
      )
    } finally {
      await locker.release()
    }
    // Nothing was left claimed: the next start works.
    const t = await first.restart()
    try {
      await calls(t, 1)
    } finally {
      await t.cleanup()
    }
  })
})
