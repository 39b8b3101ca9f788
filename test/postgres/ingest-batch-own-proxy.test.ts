import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { hashKey } from '../../src/main/proxy/attribution'
import { postJson, request } from '../support/http'
import { localValue, until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { RAN, batchCost, chat, line, reasoning, response } from '../providers/batch-support'

/**
 * A team server whose own proxy reads a Batch API results file (a script on the team server's
 * machine downloads it) that a member's Burnrate read too and sent: the proxy recorded the
 * requests again, under ids of its own, whenever the member's copy came first (it looked for
 * the same answer among this server's own calls only). It now finds the member's copy, and a
 * member's copy sent after finds the proxy's: one copy, in either order, on SQLite and PostgreSQL,
 * and on two instances doing both at once.
 */
const KEY = 'sk-proj-team-batch-own-01'
const ALICE = 'team-token-alice-own-proxy-3f9a'
const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } }

/** The results file of round `r`: three requests that ran (answer ids of the round's own), one expired. */
const answers = (r: number) => [
  { line: `batch_req_own_${r}_1`, body: { ...chat, id: `${chat.id}-${r}` }, rid: `${chat.id}-${r}`, model: chat.model, endpoint: 'batch.chat.completions', input: 1149, cached: 1024, output: 353, reasoning: 0, ts: RAN },
  { line: `batch_req_own_${r}_2`, body: { ...reasoning, id: `${reasoning.id}-${r}` }, rid: `${reasoning.id}-${r}`, model: reasoning.model, endpoint: 'batch.chat.completions', input: 11, cached: 0, output: 228, reasoning: 192, ts: RAN + 1 },
  { line: `batch_req_own_${r}_3`, body: { ...response, id: `${response.id}-${r}` }, rid: `${response.id}-${r}`, model: response.model, endpoint: 'batch.responses', input: 11, cached: 0, output: 327, reasoning: 320, ts: RAN + 2 },
]
const output = (r: number) =>
  Buffer.from([...answers(r).map((a) => line(a.line, a.line, a.body)), line(`batch_req_own_${r}_4`, 'task-4', null)].join('\n') + '\n')

const h = usePostgres({
  upstream: (req) => {
    const round = /\/v1\/files\/file-own-(\d+)\/content/.exec(req.url)
    return round ? { headers: { 'content-type': 'application/octet-stream' }, body: output(Number(round[1])) } : { status: 404, body: '{}' }
  },
})

/** Alice's copy of round `r`'s requests, as her Burnrate recorded them (ids of her own from `first`). */
const aliceCopy = (r: number, first: number): IngestCall[] =>
  answers(r).map(
    (a, i) =>
      ({
        id: first + i, t: new Date(a.ts * 1000).toISOString(), provider: 'openai', model: a.model, api_key_hash: hashKey('sk-proj-alice-own-key'),
        tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: a.input, output_tokens: a.output, cache_read_tokens: a.cached,
        cache_write_tokens: 0, reasoning_tokens: a.reasoning, cost_usd: batchCost(a.model, { input_tokens: a.input, output_tokens: a.output, cache_read_tokens: a.cached }, a.ts),
        priced: true, estimated: false, latency_ms: 0, response_id: a.rid, source: 'proxy', billing: 'api', project: '', member: '', endpoint: a.endpoint,
      }) as IngestCall,
  )

const send = (t: TestServer, calls: IngestCall[]) => postJson(`${t.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })
const read = async (t: TestServer, r: number) => {
  const got = await request(`${t.url}/v1/files/file-own-${r}/content`, { headers: { authorization: `Bearer ${KEY}` } })
  expect(got.body.equals(output(r))).toBe(true)
}
/** The proxy's batch recorder is done with round `r`: each request's key is kept (stored, or matched to the copy held). */
const recorded = (t: TestServer, r: number) =>
  until(`round ${r}'s requests are recorded or matched`, () => Number(localValue(t.dbFile, `SELECT count(*) FROM import_keys WHERE instr(key, 'batch_req_own_${r}_') > 0`)) === 3)

type Count = (r: number) => Promise<{ member: string; rid: string; n: number }[]>
const pgCount =
  (h2: typeof h, url: string): Count =>
  async (r) =>
    h2.store(url).all(`SELECT coalesce(member, '') AS member, response_id AS rid, count(*)::int AS n FROM calls WHERE response_id LIKE @like AND endpoint LIKE 'batch.%' GROUP BY 1, 2 ORDER BY 2`, {
      like: `%-${r}`,
    })
const sqliteCount =
  (t: TestServer): Count =>
  async (r) => {
    const Database = (await import('better-sqlite3')).default
    const db = new Database(t.dbFile, { readonly: true })
    try {
      return db
        .prepare(`SELECT coalesce(member, '') AS member, response_id AS rid, count(*) AS n FROM calls WHERE response_id LIKE ? AND endpoint LIKE 'batch.%' GROUP BY 1, 2 ORDER BY 2`)
        .all(`%-${r}`) as { member: string; rid: string; n: number }[]
    } finally {
      db.close()
    }
  }
const held = (r: number, member: string) => answers(r).map((a) => ({ member, rid: a.rid, n: 1 })).sort((x, y) => x.rid.localeCompare(y.rid))

async function bothOrders(t: TestServer, count: Count): Promise<void> {
  // The server's own proxy first, then alice's copy: hers are duplicates.
  await read(t, 1)
  await recorded(t, 1)
  expect(await count(1)).toEqual(held(1, ''))
  expect((await send(t, aliceCopy(1, 10))).json()).toMatchObject({ accepted: 0, duplicates: 3, rejected: [] })
  expect(await count(1)).toEqual(held(1, ''))
  // Alice's copy first, then the server's proxy reads the same file: nothing recorded again.
  expect((await send(t, aliceCopy(2, 20))).json()).toMatchObject({ accepted: 3, duplicates: 0, rejected: [] })
  await read(t, 2)
  await recorded(t, 2)
  expect(await count(2)).toEqual(held(2, 'alice'))
  // Read again: still one. The recorder stores what reads hand it in turn (src/main/batch/record.ts):
  // round 3's requests, read next, are recorded after anything the read again stores.
  await read(t, 2)
  await read(t, 3)
  await recorded(t, 3)
  expect(await count(3)).toEqual(held(3, ''))
  expect(await count(2)).toEqual(held(2, 'alice'))
}

describe("a team server's own proxy and a member reading the same Batch API results", () => {
  it('keep one copy in either order on PostgreSQL', async () => {
    const url = h.database()
    const t = await h.server({ url, config })
    await bothOrders(t, pgCount(h, url))
  })

  it('keep one copy in either order on SQLite', async () => {
    const t = await h.server({ url: null, config })
    await bothOrders(t, sqliteCount(t))
  })

  it('keep one copy when one instance reads the file as another takes the member\'s copy, round after round', async () => {
    const url = h.database()
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const count = pgCount(h, url)
    for (let r = 100; r < 115; r++) {
      const [, sent] = await Promise.all([read(a, r), send(b, aliceCopy(r, r * 10))])
      expect(sent.status).toBe(200)
      await recorded(a, r)
      const rows = await count(r)
      expect(rows.map((x) => [x.rid, x.n]), `round ${r}: ${JSON.stringify(rows)}`).toEqual(held(r, '').map((x) => [x.rid, 1]))
    }
  })
})
