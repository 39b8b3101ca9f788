import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { line, notMarks, storedAfter } from './batch-support'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from './ledger'

// An OpenAI batch output file read for the first time weeks after its requests ran (the file is
// kept; a script fetches it late), older than what retention pruned: its requests were taken for
// log entries whose proxied twin retention may have pruned, and dropped as "expired", so they never
// reached the ledger or its rollups. A batch request has no proxied twin, and its key (kept for
// good in import_keys) tells a read of the same file again, so it is recorded, once.

const KEY = 'sk-test-batch-old-aaaaaaaaaa'
const DAY = 86_400_000
/** When the requests ran: 40 days ago. */
const RAN = Math.floor((Date.now() - 40 * DAY) / 1000)
const chat = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), created: RAN }
const OUTPUT = Buffer.from(line('batch_req_old001', 'task-1', chat) + '\n')

describe('an OpenAI batch output file older than what retention pruned', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }))
    t = await startTestServer({ timezone: 'UTC' }, upstream.url)
    // Retention pruned everything before 33 days ago.
    const db = new Database(t.dbFile)
    db.prepare('UPDATE retention_state SET pruned_before = ? WHERE id = 1').run(Date.now() - 33 * DAY)
    expect(db.prepare('SELECT pruned_before FROM retention_state WHERE id = 1').pluck().get()).toBeGreaterThan(0)
    db.close()
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  it('records its requests once, read once or twice', async () => {
    const content = () => request(`${t.url}/v1/files/file-old01/content`, { headers: { authorization: `Bearer ${KEY}` } })
    const batchRows = () => notMarks(rows(t)).filter((r) => r.endpoint.startsWith('batch.'))
    expect((await content()).status).toBe(200)
    await eventually(() => rows(t).filter((r) => r.endpoint === 'files.content').length === 1)
    const got = (await eventually(() => (batchRows().length === 1 ? batchRows() : undefined)))!
    expect(got[0]).toMatchObject({ response_id: chat.id, ts: RAN * 1000, provider: 'openai' })
    expect(got[0].cost_usd).toBeGreaterThan(0)
    expect((await content()).status).toBe(200)
    await eventually(() => rows(t).filter((r) => r.endpoint === 'files.content').length === 2)
    await storedAfter(t, upstream)
    expect(batchRows()).toHaveLength(1)
  })
})
