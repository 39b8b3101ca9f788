import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { CALL_COLUMNS, CSV_HEADER, type CallRow, csvLine, toCall } from '../../src/main/dashboard/calls'
import {
  IDLE_MS,
  THREAD_MIN_ROWS,
  exportThreadsCreated,
  exportThreadsIdle,
  exportThreadsUsed,
  exportThreadScript,
  exportsShared,
  stopIdleExportThreads,
  threadRows,
  useExportThread,
} from '../../src/main/dashboard/export-thread'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { makeCall, rng } from './seed'

/**
 * The export as the headless server makes it: the first calls on the main thread, the rest read
 * and formatted on export threads (the built out/main/export-worker.js; `npm test` builds first)
 * while the main thread writes their buffers. The bytes are the main thread's formulas' exactly
 * (`csvLine`, `JSON.stringify(toCall(r))`: what the export always wrote), with one thread or
 * several sharing the window, to a slow reader, while calls are proxied, when the client leaves,
 * and when a thread dies part-way (the main thread writes the rest from the last page written).
 */
const ROOT = resolve(__dirname, '../..')
const WORKER = join(ROOT, 'out/main/export-worker.js')
const N = 24_000
const TRICKY = ['plain', 'comma, inside', 'a "quoted" word', 'line\nbreak', 'crlf\r\nbreak', 'semi;colon', ';=1+1', 'tab\t=1+1', '=SUM(A1)', '-2', '@cmd', 'ünïcødé ✓ 日本', 'back\\slash', 'unit\u001fseparator', 'ctl\u0001char', '']
const COSTS = [0.1 + 0.2, 1 / 3, 1e-7, 1e21, 123.456, 0, 5e-324, Infinity]

let t: TestServer
let upstream: MockUpstream
let dir: string
const now = Date.now()

beforeAll(async () => {
  if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  dir = mkdtempSync(join(tmpdir(), 'burnrate-export-thread-'))
  const r = rng(7)
  for (let i = 0; i < N; i++) {
    const odd = i % 97 === 0 ? TRICKY[(i / 97) % TRICKY.length] : null
    // Several calls share a millisecond now and then, so the keyset's id breaks ties across pages.
    const ts = now - 2 * 86_400_000 + Math.floor(i / 3) * 7_000 + (i % 3 === 0 ? 0 : 1)
    t.server.ledger.record(
      makeCall({
        ts,
        tenant: i % 4 === 0 ? 'one' : 'many',
        agent: odd ?? `agent-${i % 9}`,
        session: odd ?? `s-${Math.floor(i / 40)}`,
        project: odd ?? `/home/dev/p${i % 5}`,
        // An imported call never shares an answer id with a proxied one: that pair is one answer,
        // which the server supersedes (../import: the imported row goes to $0) while the test reads.
        response_id: odd !== null && i % 6 !== 0 ? odd : i % 2 ? `resp_${i}` : '',
        member: odd ?? '',
        model: odd || 'gpt-4o-mini',
        cost_usd: i % 11 === 0 ? COSTS[(i / 11) % COSTS.length] : r() / 100,
        latency_ms: Math.round(r() * 1e6) / 100,
        input_tokens: Math.floor(r() * 1e5),
        streamed: i % 2 === 0,
        priced: i % 5 !== 0,
        estimated: i % 7 === 0,
        source: i % 6 === 0 ? 'import' : 'proxy',
        billing: i % 8 === 0 ? 'subscription' : 'api',
      }),
    )
  }
  // Tenant `late`: 2,100 calls 40 s apart from 30 hours ago, then 4,000 in the last hour (a
  // burst after a quiet start: the first 2,000 calls' pace foretells about 700 more).
  for (let i = 0; i < 6_100; i++) {
    const ts = i < 2_100 ? now - 30 * 3_600_000 + i * 40_000 : now - 3_600_000 + (i - 2_100) * 800
    t.server.ledger.record(makeCall({ ts, tenant: 'late', session: `late-${i % 13}`, cost_usd: i / 7, input_tokens: i }))
  }
  t.server.ledger.flush()
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

/** What the export has always written for these calls: the main thread's formulas over every row, oldest first. */
function expected(format: 'csv' | 'json', tenant: string | null): string {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    const rows = db
      .prepare(`SELECT ${CALL_COLUMNS} FROM calls${tenant ? ' WHERE tenant = ?' : ''} ORDER BY ts, id`)
      .all(...(tenant ? [tenant] : [])) as CallRow[]
    return format === 'csv' ? CSV_HEADER + rows.map(csvLine).join('') : '{"calls":[' + rows.map((r) => JSON.stringify(toCall(r))).join(',') + ']}'
  } finally {
    db.close()
  }
}

const exportUrl = (format: string, tenant: string | null) => `${t.url}/api/dashboard/export?format=${format}&range=7d${tenant ? `&tenant=${tenant}` : ''}`
/** Reads a JSON export of every tenant and leaves once 2 MiB have come (past the main thread's first page: the threads are under way). */
function leaveMidExport(): Promise<void> {
  return new Promise<void>((done, fail) => {
    const req = http.get(exportUrl('json', null), (res) => {
      let bytes = 0
      res.on('data', (c: Buffer) => {
        bytes += c.length
        if (bytes > 2 * 1024 * 1024) {
          req.destroy()
          done()
        }
      })
    })
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? done() : fail(e)))
  })
}

describe('export threads', () => {
  for (const threads of [1, 2, 3]) {
    it(`${threads} thread(s): CSV and JSON, every tenant and one, byte for byte what the main thread writes`, async () => {
      useExportThread(WORKER, { threads, minRows: 0, mainRows: 2000 })
      for (const tenant of [null, 'one']) {
        for (const format of ['csv', 'json'] as const) {
          const before = exportThreadsUsed()
          const got = await request(exportUrl(format, tenant))
          expect(got.status).toBe(200)
          // More rows than the main thread's first page: the threads wrote the rest.
          expect(exportThreadsUsed() - before).toBe(threads)
          const want = expected(format, tenant)
          expect(got.text.length).toBe(want.length)
          expect(got.text === want).toBe(true)
        }
      }
    })
  }

  it('a slow reader holds the threads back; proxied calls are answered and recorded meanwhile, and the export is whole', async () => {
    useExportThread(WORKER, { threads: 2, minRows: 0, mainRows: 2000 })
    // The calls proxied meanwhile are another tenant's: what this export holds is known before it starts.
    const want = expected('csv', 'many')
    const received: Buffer[] = []
    let pauses = 0
    let proxied = 0
    await new Promise<void>((done, fail) => {
      http
        .get(exportUrl('csv', 'many'), (res) => {
          res.on('data', (c: Buffer) => {
            received.push(c)
            if (pauses < 3) {
              pauses++
              res.pause()
              // While this export waits on its reader, a call through the proxy goes through.
              postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
                authorization: 'Bearer sk-export-during-1234',
                'x-burnrate-tenant': 'during',
              })
                .then((r) => {
                  expect(r.status).toBe(200)
                  proxied++
                  res.resume()
                })
                .catch(fail)
            }
          })
          res.on('end', () => done())
          res.on('error', fail)
        })
        .on('error', fail)
    })
    expect(proxied).toBe(3)
    expect(Buffer.concat(received).toString('utf8') === want).toBe(true)
    const during = (await request(`${t.url}/api/dashboard/export?format=json&tenant=during`)).json().calls
    expect(during).toHaveLength(3)
  })

  it('a client that leaves mid-export stops the threads; the server goes on and the next export is whole', async () => {
    useExportThread(WORKER, { threads: 2, minRows: 0, mainRows: 2000 })
    await leaveMidExport()
    const again = await request(exportUrl('json', 'one'))
    expect(again.text === expected('json', 'one')).toBe(true)
  })

  it('a thread that dies part-way: the main thread writes the rest from after the last page written, the same bytes', async () => {
    // The real thread, made to exit after handing over two pages.
    const dying = join(dir, 'dying-worker.mjs')
    writeFileSync(
      dying,
      `import { parentPort } from 'node:worker_threads'
const post = parentPort.postMessage.bind(parentPort)
let pages = 0
parentPort.postMessage = (m, transfer) => {
  if (m.type === 'page' && ++pages > 2) process.exit(3)
  post(m, transfer)
}
await import(${JSON.stringify(pathToFileURL(WORKER).href)})
`,
    )
    const missing = join(dir, 'not-a-worker.mjs')
    writeFileSync(missing, `throw new Error('this thread fails as it starts')\n`)
    for (const [script, threads] of [[dying, 1], [dying, 2], [missing, 1]] as const) {
      useExportThread(script, { threads, minRows: 0, mainRows: 2000 })
      for (const format of ['csv', 'json'] as const) {
        const before = exportThreadsUsed()
        const got = await request(exportUrl(format, null))
        expect(exportThreadsUsed() - before).toBe(threads)
        expect(got.status).toBe(200)
        expect(got.text === expected(format, null)).toBe(true)
      }
    }
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
  })

  it('an export is handed to threads by its count of calls, not by how dense its first page is', async () => {
    useExportThread(WORKER, { threads: 1, minRows: 5_000, mainRows: 2_000 })
    const before = exportThreadsUsed()
    const got = await request(exportUrl('csv', 'late'))
    expect(exportThreadsUsed() - before).toBe(1)
    expect(got.text === expected('csv', 'late')).toBe(true)
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
  })

  it('threads that finished an export take the next one (another format and tenant, the same bytes), and are stopped when idle', async () => {
    for (const threads of [1, 2]) {
      useExportThread(WORKER, { threads, minRows: 0, mainRows: 2000 })
      await request(exportUrl('csv', null))
      expect(exportThreadsIdle()).toBeGreaterThanOrEqual(threads)
      const created = exportThreadsCreated()
      const used = exportThreadsUsed()
      for (const [format, tenant] of [['json', 'many'], ['csv', 'late'], ['json', null]] as const) {
        const got = await request(exportUrl(format, tenant))
        expect(got.text === expected(format, tenant)).toBe(true)
      }
      // Three exports on the threads kept from the first: none started anew.
      expect(exportThreadsUsed() - used).toBe(3 * threads)
      expect(exportThreadsCreated()).toBe(created)
    }
    // An idle thread is stopped after its idle time: nothing is held at rest.
    stopIdleExportThreads()
    useExportThread(WORKER, { idleMs: 20 })
    await request(exportUrl('csv', 'many'))
    await vi.waitFor(() => expect(exportThreadsIdle()).toBe(0), { timeout: 20_000, interval: 20 })
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000, idleMs: IDLE_MS })
  })

  it('a thread whose client left is not kept: the next export starts a new one', async () => {
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
    stopIdleExportThreads()
    await request(exportUrl('csv', 'many'))
    expect(exportThreadsIdle()).toBe(1)
    const created = exportThreadsCreated()
    await leaveMidExport()
    // The kept thread took that export and was stopped with it.
    const again = await request(exportUrl('csv', null))
    expect(again.text === expected('csv', null)).toBe(true)
    expect(exportThreadsCreated()).toBe(created + 1)
  })

  it('an export of fewer calls than a new thread is worth is handed to threads only when they are idle', async () => {
    useExportThread(WORKER, { threads: 1, minRows: 20_000, idleMinRows: 5_000, mainRows: 2_000, idleMainRows: 700, shareMaxRows: 0 })
    stopIdleExportThreads()
    // Without an idle thread the main thread writes the first 2,000 calls; with one, 700.
    expect(threadRows(exportThreadScript()!, 1)).toEqual({ min: 20_000, main: 2_000, share: 0 })
    // 18,000 calls: none is idle, none is started.
    let used = exportThreadsUsed()
    expect((await request(exportUrl('csv', 'many'))).text === expected('csv', 'many')).toBe(true)
    expect(exportThreadsUsed()).toBe(used)
    // Every tenant's calls (30,100): one is started, and kept.
    await request(exportUrl('json', null))
    expect(exportThreadsIdle()).toBe(1)
    expect(threadRows(exportThreadScript()!, 1)).toEqual({ min: 5_000, main: 700, share: 0 })
    const created = exportThreadsCreated()
    used = exportThreadsUsed()
    expect((await request(exportUrl('csv', 'many'))).text === expected('csv', 'many')).toBe(true)
    expect(exportThreadsUsed()).toBe(used + 1)
    expect(exportThreadsCreated()).toBe(created)
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000, idleMainRows: 2000 })
  })

  it('an export of fewer calls than SHARE_MAX_ROWS, with its threads idle, is shared evenly with the main thread: the same bytes', async () => {
    for (const threads of [1, 2]) {
      useExportThread(WORKER, { threads, minRows: 0, mainRows: 2_000, shareMaxRows: 20_000 })
      // A first export leaves the threads idle (no thread was idle before it: not shared).
      stopIdleExportThreads()
      const before = exportsShared()
      expect((await request(exportUrl('csv', 'many'))).text === expected('csv', 'many')).toBe(true)
      expect(exportsShared()).toBe(before)
      expect(threadRows(exportThreadScript()!, threads).share).toBe(20_000)
      // 18,000 calls: shared, in both formats, each reading all of its part ahead.
      for (const format of ['csv', 'json'] as const) {
        expect((await request(exportUrl(format, 'many'))).text === expected(format, 'many')).toBe(true)
      }
      expect(exportsShared()).toBe(before + 2)
      // Every tenant's 30,100 calls: more than that, not shared.
      expect((await request(exportUrl('json', null))).text === expected('json', null)).toBe(true)
      expect(exportsShared()).toBe(before + 2)
    }
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000, shareMaxRows: 0 })
  })

  it("the server's close stops the threads kept idle", async () => {
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
    stopIdleExportThreads()
    const other = await startTestServer({ timezone: 'UTC' }, upstream.url)
    try {
      for (let i = 0; i < 3_000; i++) other.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 1_000 }))
      other.server.ledger.flush()
      const got = await request(`${other.url}/api/dashboard/export?format=csv&range=7d`)
      expect(got.text.split('\r\n')).toHaveLength(3_002)
      expect(exportThreadsIdle()).toBe(1)
    } finally {
      await other.cleanup()
    }
    expect(exportThreadsIdle()).toBe(0)
  })

  it('an export with no `until` on threads has the calls stamped ahead of the clock, and ends', async () => {
    useExportThread(WORKER, { threads: 2, minRows: 0, mainRows: 2000 })
    const other = await startTestServer({ timezone: 'UTC' }, upstream.url)
    try {
      for (let i = 0; i < 3_000; i++) other.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 1_000 }))
      // A team member's clock an hour ahead, and one ten years ahead: the window has no end, and
      // the threads' segments stop after its last call (not at the open end, millions of them on).
      other.server.ledger.record(makeCall({ ts: now + 3_600_000, cost_usd: 2 }))
      other.server.ledger.record(makeCall({ ts: now + 10 * 365 * 86_400_000, cost_usd: 3 }))
      other.server.ledger.flush()
      const before = exportThreadsUsed()
      const got = await request(`${other.url}/api/dashboard/export?format=csv&since=1970-01-01`)
      expect(exportThreadsUsed() - before).toBe(2)
      const lines = got.text.split('\r\n')
      expect(lines).toHaveLength(3_004)
      expect(lines.slice(-3, -1).map((l) => l.split(',')[1])).toEqual([new Date(now + 3_600_000).toISOString(), new Date(now + 10 * 365 * 86_400_000).toISOString()])
    } finally {
      await other.cleanup()
      useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
    }
  })

  it('an export with few calls left after its first page is written on the main thread, starting no thread', async () => {
    useExportThread(WORKER, { threads: 2, minRows: THREAD_MIN_ROWS })
    // 6,000 calls over two days: the first page foretells about 4,000 more, far below the bar.
    const before = exportThreadsUsed()
    const got = await request(exportUrl('csv', 'one'))
    expect(exportThreadsUsed()).toBe(before)
    expect(got.text === expected('csv', 'one')).toBe(true)
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
  })
})
