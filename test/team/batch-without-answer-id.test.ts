import { afterAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { RAN, chat, line } from '../providers/batch-support'

/**
 * Two members' Burnrates that read the same OpenAI Batch API output file (one ran the batch, a
 * teammate's script downloaded its results too) each record its requests and each send them: the
 * team server keeps a request once, by its answer's id (README: A Batch API request once, whoever
 * read its results). An embeddings answer has no id (`{object: "list", data, model, usage}`), so its
 * requests were recorded with no answer id, never found as another member's, and the team server
 * stored and counted each of them once per member that read the file. A batch request whose answer
 * names no id now carries its request's own identity as its answer id, the same for every reader.
 */
const ALICE = 'team-token-alice-batch-noid-5e1c'
const BOB = 'team-token-bob-batch-noid-8a2f'

/** An embeddings answer, as OpenAI's Batch API puts it in an output line: no `id`. */
const embeddings = (tokens: number) => ({
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.0023064255, -0.009327292, 0.015797347] }],
  model: 'text-embedding-3-small',
  usage: { prompt_tokens: tokens, total_tokens: tokens },
})

const OUTPUT = Buffer.from(
  [line('batch_req_noid001', 'emb-1', embeddings(812)), line('batch_req_noid002', 'emb-2', embeddings(1530)), line('batch_req_noid003', 'chat-3', chat)].join('\n') + '\n',
)

describe('an OpenAI batch of embeddings read by two members', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('is stored and counted once on the team server', async () => {
    const upstream: MockUpstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }))
    cleanups.push(() => upstream.close())
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] } })
    cleanups.push(() => team.cleanup())
    const members: TestServer[] = []
    for (const [token, key] of [[ALICE, 'sk-proj-alice-batch-noid-1111'], [BOB, 'sk-proj-bob-batch-noid-2222']]) {
      const m = await startTestServer({ timezone: 'UTC', team: { url: team.url, token, max_backoff_ms: 500 } }, upstream.url)
      cleanups.push(() => m.cleanup())
      members.push(m)
      const r = await request(`${m.url}/v1/files/file-noid-out/content`, { headers: { authorization: `Bearer ${key}` } })
      expect(r.status).toBe(200)
      expect(r.body.equals(OUTPUT)).toBe(true)
      // Its read and the batch's three requests recorded, and all of them sent.
      await eventually(() => ledgerRows(m.dbFile).length === 4)
      await eventually(async () => (await request(`${m.url}/api/health`)).json().team.backlog === 0, 30_000)
    }

    const own = ledgerRows(members[0].dbFile, "endpoint LIKE 'batch.%'")
    // (An embeddings answer names no time: its requests are dated when the file is read.)
    expect(own.map((c) => [c.endpoint, c.input_tokens, c.endpoint === 'batch.chat.completions' ? c.ts : 'read'])).toEqual([
      ['batch.embeddings', 812, 'read'],
      ['batch.embeddings', 1530, 'read'],
      ['batch.chat.completions', 1149, RAN * 1000],
    ])
    const held = ledgerRows(team.dbFile, "endpoint LIKE 'batch.%'")
    expect(held.map((c) => [c.member, c.endpoint, c.input_tokens])).toEqual([
      ['alice', 'batch.embeddings', 812],
      ['alice', 'batch.embeddings', 1530],
      ['alice', 'batch.chat.completions', 1149],
    ])
    const sum = (rows: { cost_usd: number }[]) => rows.reduce((a, c) => a + c.cost_usd, 0)
    expect(sum(held)).toBe(sum(own))
    // Each request is known by the same answer id at every reader.
    expect(ledgerRows(members[1].dbFile, "endpoint LIKE 'batch.%'").map((c) => c.response_id)).toEqual(own.map((c) => c.response_id))
    expect(own.every((c) => c.response_id !== '')).toBe(true)
    // Both reads of the file themselves are there, at $0.
    expect(ledgerRows(team.dbFile, "endpoint = 'files.content'").map((c) => [c.member, c.cost_usd])).toEqual([
      ['alice', 0],
      ['bob', 0],
    ])
  })
})
