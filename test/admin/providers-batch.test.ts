import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OUTPUT } from '../providers/batch-support'
import { rows } from '../providers/ledger'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from './support'

// A Batch API's requests, stored from its output file as a client reads it through Burnrate, ran
// at the provider without passing through here: the provider's status (`requests_today`,
// `avg_latency_ms`, `last_request_at`) counts the one read that brought them, whether it is read
// live or from the database after a restart.

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }))
  t = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC' }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const openai = async (s: TestServer) => (await admin(s.url, 'GET', '/providers')).json().find((p: any) => p.name === 'openai')

describe('GET /api/admin/providers and a Batch API output file read through the proxy', () => {
  it('counts the read, not the requests it recorded, before and after a restart', async () => {
    const r = await request(`${t.url}/v1/files/file-output01/content`, { headers: { authorization: 'Bearer sk-test-batch-providers-0001' } })
    expect(r.status).toBe(200)
    await eventually(() => rows(t).filter((c) => c.endpoint.startsWith('batch.')).length === 3)
    const live = await eventually(async () => {
      const p = await openai(t)
      return p.requests_today === 1 ? p : null
    })
    expect(live).toMatchObject({ requests_today: 1, errors_today: 0, last_status: 200 })
    t = await t.restart()
    expect(await openai(t)).toEqual(live)
  })
})
