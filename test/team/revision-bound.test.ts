import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { MAX_REVISION } from '../../src/main/team/validate'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { keyHash } from '../dashboard/seed'
import { postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A team server numbers its own revisions (its own calls re-priced) one above the highest revision
 * in its ledger, members' included. A member (hostile, or buggy) that sent revisions up to 2^53-1
 * pushed that numbering past exact integers: the team server's next own revisions came out equal
 * (2^53 + 1 is 2^53 as a double), so a call re-priced twice on it was not numbered above what was
 * sent before. A member's revision above MAX_REVISION is refused (param `calls[i].revision`), and
 * every revision up to it is taken as before.
 */
const ALICE = 'team-token-alice-revision-bound-7c2e'
const MODEL = 'acme-private-model-bound'
const BASE = Date.now() - 60_000
const USAGE = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 }

let upstream: MockUpstream
let team: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'chatcmpl-bound-1', object: 'chat.completion', created: 1, model: MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: USAGE,
    }),
  }))
  team = await startTestServer({ timezone: 'UTC', ...ADMIN_CONFIG, team: { members: [{ name: 'alice', token: ALICE }] } }, upstream.url)
})
afterAll(async () => {
  await team?.cleanup()
  await upstream?.close()
})

function call(id: number, revision?: number, cost = 0.002): IngestCall & { revision?: number } {
  return {
    id, t: new Date(BASE + id).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-bound-0001'),
    key_hint: 'sk-…0001', tenant: '', agent: 'codex', session: 's', status: 200, streamed: false, input_tokens: 100, output_tokens: 10,
    cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 50,
    response_id: `resp_bound_${id}`, source: 'proxy', billing: 'api', project: '', member: '', ...(revision === undefined ? {} : { revision }),
  }
}
const ingest = (calls: unknown[]) => postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })

/** Prices MODEL at `input` $/Mtok on the team server and re-prices its own calls: a new own revision. */
async function reprice(input: number): Promise<void> {
  expect((await admin(team.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: input, output_mtok: 8 } })).status).toBe(200)
  expect((await admin(team.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json()).toMatchObject({ repriced: 1 })
}

describe("a member's revision numbers", () => {
  it("cannot push the team server's own revisions past exact integers", async () => {
    const r = await postJson(`${team.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-proj-team-own-0002' })
    expect(r.status).toBe(200)
    expect((await ingest([call(1), call(2)])).json()).toMatchObject({ accepted: 2, rejected: [] })
    // Revisions of alice's calls: one at the bound, one beyond the largest exact integer's reach.
    const sent = (await ingest([call(1, MAX_REVISION, 0.003), call(2, Number.MAX_SAFE_INTEGER, 0.004)])).json()

    const own = () => ledgerRows(team.dbFile).find((c: any) => c.origin_id === null)
    await reprice(2)
    const first = own().revision
    await reprice(3)
    const second = own().revision
    // Each own revision numbered above every earlier one, exactly.
    expect({ first, second, step: second - first }).toEqual({ first, second, step: 1 })
    expect(Number.isSafeInteger(second)).toBe(true)
    expect(first).toBeGreaterThan(MAX_REVISION)

    // The revision at the bound replaced what was held; the one beyond it is refused, naming it.
    expect(sent).toMatchObject({ accepted: 0, revised: 1, rejected: [{ index: 1, id: 2, error: { type: 'invalid_request', param: 'calls[1].revision' } }] })
    const held = ledgerRows(team.dbFile).filter((c: any) => c.member === 'alice').map((c: any) => [c.origin_id, c.revision, c.cost_usd])
    expect(held).toEqual([[1, MAX_REVISION, 0.003], [2, null, 0.002]])
  })
})
