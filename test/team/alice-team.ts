import { afterAll, beforeAll } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** What an ingested call's fields are unless a test says otherwise: no tenant, a 200, no cache or reasoning tokens, priced. */
const PLAIN = {
  tenant: '', status: 200, streamed: false, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0,
  priced: true, estimated: false, latency_ms: 0, member: '',
}

/**
 * A SQLite team server with one member, alice (`token`), started before the file's tests and
 * stopped after them (its providers answer 500: only ingested calls reach it). `ingest` sends
 * calls as alice; `call` makes call `id` at `cost`, a minute ago plus `id` ms, of `fields`.
 */
export function useAliceTeam(token: string) {
  const base = Date.now() - 60_000
  let upstream: MockUpstream
  let team: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 500, headers: {}, body: '' }))
    team = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token }] } }, upstream.url)
  })
  afterAll(async () => {
    await team?.cleanup()
    await upstream?.close()
  })
  return {
    /** The team server (after beforeAll). */
    get team(): TestServer {
      return team
    },
    ingest: (calls: unknown[]) => postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${token}` }),
    call: (id: number, cost: number, fields: Record<string, unknown>): IngestCall =>
      ({ id, t: new Date(base + id).toISOString(), ...PLAIN, cost_usd: cost, ...fields }) as IngestCall,
  }
}
