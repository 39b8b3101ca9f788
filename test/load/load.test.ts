import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import {
  type BuiltServer,
  type LoadResult,
  type LoadUpstream,
  type MemoryProbe,
  findKeysInFiles,
  loadFixtures,
  makeKeys,
  readLedger,
  runLoad,
  startBuiltServer,
  startLoadUpstream,
} from './harness'

/**
 * The CI load test, bounded: 5,000 streaming calls, 200 at a time, against the built server, with
 * a dashboard poller. By number, not for a time: a quiet machine sends them in seconds, a busy one
 * takes longer (10 s of load was 870 calls on 2 cores beside other runs, where the test wanted
 * 1,000). Afterwards every completed call is recorded once, the recorded cost
 * is the sum of the fixtures' costs, memory is back at its start level, and no raw API key is
 * in the database, its WAL or the log. (`npm run soak` runs the same for 60 s and prints figures.)
 */

const CONCURRENCY = 200
const CALLS = 5000
const fixtures = loadFixtures()
const keys = makeKeys(20, 'load')
let upstream: LoadUpstream
let server: BuiltServer
let result: LoadResult & { pollsPerHalf: number[] }
let before: MemoryProbe
let middle: MemoryProbe
let after: MemoryProbe

beforeAll(async () => {
  upstream = await startLoadUpstream(fixtures, 10)
  server = await startBuiltServer({}, upstream.url)
  // Warm up (JIT, pools, the tokenizer-free paths), then take the start level.
  await runLoad({ url: server.url, fixtures, concurrency: 20, durationMs: 1500, keys, idPrefix: 'warm' })
  await eventually(() => readLedger(server.dbFile).count > 0)
  await new Promise((r) => setTimeout(r, 300))
  before = await server.probe()
  // Two halves: a leak keeps growing from the first to the second, while the allocator's
  // high-water mark (RSS that is not handed back to the OS) is reached in the first.
  const half = (idPrefix: string) =>
    runLoad({
      url: server.url,
      fixtures,
      concurrency: CONCURRENCY,
      durationMs: 0,
      calls: CALLS / 2,
      keys,
      idPrefix,
      poll: { paths: ['/api/dashboard/summary', '/api/dashboard/timeseries?range=1h', '/api/dashboard/costs?group_by=model&range=24h', '/api/health'], everyMs: 200 },
    })
  const a = await half('load-a')
  await new Promise((r) => setTimeout(r, 500))
  middle = await server.probe()
  const b = await half('load-b')
  result = { calls: [...a.calls, ...b.calls], completed: [...a.completed, ...b.completed], failed: [...a.failed, ...b.failed], polls: [...a.polls, ...b.polls], pollsPerHalf: [a.polls.length, b.polls.length] }
  await new Promise((r) => setTimeout(r, 1000))
  after = await server.probe()
}, 300_000)

afterAll(async () => {
  await server?.dispose()
  await upstream?.close()
})

describe(`${CALLS} streaming calls, ${CONCURRENCY} at a time, with a dashboard poller`, () => {
  it('completes every call, and records each exactly once', async () => {
    expect(result.failed.map((c) => `${c.id}:${c.status}`)).toEqual([])
    expect(result.calls.length).toBe(CALLS)
    expect(result.completed.length).toBe(CALLS)
    const ledger = (await eventually(() => {
      const l = readLedger(server.dbFile, 'load-')
      return l.count === result.completed.length ? l : undefined
    }, 30_000))!
    expect(ledger.integrity).toBe('ok')
    for (const c of result.completed) expect(ledger.sessions.has(c.id)).toBe(true)
  })

  it('records exactly the sum of the fixtures\' costs', () => {
    const ledger = readLedger(server.dbFile, 'load-')
    const expected = result.completed.reduce((s, c) => s + fixtures.find((f) => f.name === c.fixture)!.costUsd, 0)
    expect(expected).toBeGreaterThan(0)
    expect(Math.abs(ledger.costUsd - expected) / expected).toBeLessThan(1e-9)
  })

  it('answers the dashboard poller throughout', () => {
    // Every poll answered, in each half of the load. How many polls fit in a half is the machine's
    // speed, not the dashboard's: beside other work on 2 cores a clean-clone run made 9, and the
    // previous release's build 2, where a quiet run makes dozens; a count was a timed assertion.
    expect(result.pollsPerHalf.every((n) => n > 0)).toBe(true)
    expect(result.polls.filter((p) => p.status !== 200)).toEqual([])
  })

  it('returns to its start memory (after GC): no leak', () => {
    // The heap after the load, with every call recorded and the sockets closed, against the heap
    // before it: a leak of 2 KB per call (5,000 calls) would exceed the allowance.
    expect(after.heapUsed - before.heapUsed).toBeLessThan(Math.max(8 * 1024 * 1024, before.heapUsed * 0.25))
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(8 * 1024 * 1024)
    expect(after.external - before.external).toBeLessThan(8 * 1024 * 1024)
    expect(middle.heapUsed - before.heapUsed).toBeLessThan(Math.max(8 * 1024 * 1024, before.heapUsed * 0.25))
    // Resident memory does not return all the way: V8 keeps the larger heap it reserved under
    // load (heapTotal), and the allocator its pages. It stays bounded.
    expect(after.rss).toBeLessThan(512 * 1024 * 1024)
    expect(server.peakRss() ?? 0).toBeLessThan(768 * 1024 * 1024)
  })

  it('the health probe says all is well', async () => {
    const h = (await request(`${server.url}/api/health`)).json()
    expect(h.status).toBe('ok')
    expect(h.ledger).toMatchObject({ writable: true, pending: 0, dropped: 0 })
  })

  it('never writes a raw API key to the database, its WAL or the log', async () => {
    const files = [server.dbFile, `${server.dbFile}-wal`, `${server.dbFile}-shm`, server.logFile]
    expect(findKeysInFiles(files, keys)).toEqual([])
    // The scan does read the right files: the keys' hashes are in the database.
    const { createHash } = await import('node:crypto')
    const hashes = keys.map((k) => createHash('sha256').update(k).digest('hex'))
    const db = readLedger(server.dbFile)
    expect(db.count).toBeGreaterThan(0)
    expect(findKeysInFiles([server.dbFile, `${server.dbFile}-wal`], hashes.slice(0, 1)).length).toBeGreaterThan(0)
    // And after a clean stop (checkpointed into the main file), still none.
    await server.stop()
    expect(findKeysInFiles(files, keys)).toEqual([])
  })
})
