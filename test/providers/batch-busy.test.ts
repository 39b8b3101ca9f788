import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { EXPECTED, OUTPUT } from './batch-support'
import { rows } from './ledger'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// SQLite: a Batch API's requests are stored from the server's own connection, which waits only a
// moment (RUNTIME_BUSY_MS) for another writer's lock: the ledger's write thread, `burnrate
// import`, a tool holding the file. A lock held a little longer than that must not lose them:
// nobody reads a results file twice to have its requests recorded.

let upstream: MockUpstream
let t: TestServer
const lines: string[] = []

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }))
  t = await startTestServer({ timezone: 'UTC' }, upstream.url, undefined, { log: createLogger('info', (l) => lines.push(l)) })
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

describe('Batch API results while another connection holds the write lock', () => {
  it('are recorded once the lock is let go, each once', async () => {
    const other = new Database(t.dbFile)
    other.exec('BEGIN IMMEDIATE')
    try {
      const r = await request(`${t.url}/v1/files/file-busy01/content`, { headers: { authorization: 'Bearer sk-test-batch-busy-0001' } })
      expect(r.status).toBe(200)
      await eventually(() => lines.some((l) => l.includes('batch results:') && /database is locked|busy/i.test(l)))
    } finally {
      other.exec('COMMIT')
      other.close()
    }
    const batch = () => rows(t).filter((c) => c.endpoint.startsWith('batch.'))
    await eventually(() => batch().length === EXPECTED.length, 20_000)
    expect(batch().map((c) => c.response_id)).toEqual(EXPECTED.map((e) => e.response_id))
  })
})
