import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { EXPECTED, OUTPUT, chat, line, reasoning, response } from './batch-support'
import { rows } from './ledger'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// Batch API results whose write fails wait in memory to be tried again (./batch-busy.test.ts). The
// same output file read again meanwhile is one set of requests waiting, the newer read's, not
// one copy per read; and the requests waiting in all are bounded by ledger.max_pending, the
// results over it let go with a line that says so. Real SQLite, its write lock held by another
// connection.

/** A second output file: other requests (ids of its own), the same answers. */
const OTHER = Buffer.from(
  [
    line('batch_req_bbb001', 'task-1', { ...chat, id: `${chat.id}-b` }),
    line('batch_req_bbb002', 'task-2', { ...reasoning, id: `${reasoning.id}-b` }),
    line('batch_req_bbb005', 'task-5', { ...response, id: `${response.id}-b` }),
  ].join('\n') + '\n',
)
/** A third, of one request. */
const THIRD = Buffer.from(line('batch_req_ccc001', 'task-1', { ...chat, id: `${chat.id}-c` }) + '\n')

let upstream: MockUpstream
let t: TestServer
const lines: string[] = []

beforeAll(async () => {
  upstream = await startMockUpstream((req) => ({
    headers: { 'content-type': 'application/octet-stream' },
    body: req.url?.includes('file-other') ? OTHER : req.url?.includes('file-third') ? THIRD : OUTPUT,
  }))
  // Six requests may wait: two output files of three.
  t = await startTestServer({ timezone: 'UTC', ledger: { max_pending: 6 } }, upstream.url, undefined, { log: createLogger('info', (l) => lines.push(l)) })
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const read = async (file: string) => {
  const r = await request(`${t.url}/v1/files/${file}/content`, { headers: { authorization: 'Bearer sk-test-batch-held-0001' } })
  expect(r.status).toBe(200)
}
const count = (re: RegExp) => lines.filter((l) => l.includes('batch results:') && re.test(l)).length
const waiting = () => count(/wait for the database/)
const replaced = () => count(/replaces the one waiting/)
const overCap = () => count(/ledger\.max_pending/)

describe('Batch API results waiting for a locked database', () => {
  it('the same file read three times waits once; past ledger.max_pending a file is let go and says so; each request is stored once', async () => {
    const other = new Database(t.dbFile)
    other.exec('BEGIN IMMEDIATE')
    try {
      for (let i = 1; i <= 3; i++) {
        await read('file-held01')
        await eventually(() => waiting() + replaced() === i || undefined, 20_000)
      }
      // One set waits (the newest read's), not three copies.
      expect({ waiting: waiting(), replaced: replaced(), overCap: overCap() }).toEqual({ waiting: 1, replaced: 2, overCap: 0 })
      // Another file's three: six wait, the most allowed.
      await read('file-other01')
      await eventually(() => waiting() === 2 || undefined, 20_000)
      expect(overCap()).toBe(0)
      // One more request is over the bound: let go, with a line that says so.
      await read('file-third01')
      await eventually(() => overCap() === 1 || undefined, 20_000)
      expect(lines.find((l) => /ledger\.max_pending/.test(l))).toMatch(/batch results: 1 requests are not kept to be tried again: 6 requests already wait for the database, the most ledger\.max_pending \(6\) allows; they are recorded when the results file is read again/)
    } finally {
      other.exec('COMMIT')
      other.close()
    }
    const batch = () => rows(t).filter((c) => c.endpoint.startsWith('batch.'))
    await eventually(() => batch().length === 2 * EXPECTED.length || undefined, 20_000)
    // The file let go is recorded when read again, the database back.
    await read('file-third01')
    await eventually(() => batch().length === 2 * EXPECTED.length + 1 || undefined, 20_000)
    const ids = batch().map((c) => c.response_id as string)
    expect(ids.sort()).toEqual([...EXPECTED.map((e) => e.response_id), ...EXPECTED.map((e) => `${e.response_id}-b`), `${chat.id}-c`].sort())
  })
})
