import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { serverOverMockUpstream } from '../support/server'

/**
 * A JSON answer that starts with a UTF-8 byte order mark (some Windows-hosted gateways and
 * OpenAI-compatible servers write one) is still read for its usage: RFC 8259 lets a reader
 * ignore the mark, and `JSON.parse` does not. Before, such a call was recorded as estimated from
 * its request, with no output tokens at all, though its answer named every token exactly.
 */

const s = serverOverMockUpstream()
const BOM = Buffer.from([0xef, 0xbb, 0xbf])

async function call(body: Buffer, encoding?: 'gzip'): Promise<any> {
  const before = ledgerRows(s.t.dbFile).length
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body, encoding }))
  const r = await postJson(`${s.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: 'Bearer sk-json-bom-000000000000',
  })
  expect(r.status).toBe(200)
  // the client gets the answer as it came, mark included
  if (!encoding) expect(r.text.startsWith('\uFEFF')).toBe(true)
  return eventually(() => {
    const rows = ledgerRows(s.t.dbFile)
    return rows.length > before ? rows[rows.length - 1] : undefined
  })
}

describe('a JSON answer with a UTF-8 byte order mark', () => {
  const answer = Buffer.concat([BOM, fixture('openai-chat/chat-nonstream-cached.json')])

  it('is metered from its usage, exactly, not estimated', async () => {
    const row = await call(answer)
    expect([row.input_tokens, row.cache_read_tokens, row.output_tokens, row.estimated]).toEqual([1149, 1024, 353, 0])
    expect(row.model).toBe('gpt-4o-mini-2024-07-18')
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('gzipped too', async () => {
    const row = await call(answer, 'gzip')
    expect([row.input_tokens, row.cache_read_tokens, row.output_tokens, row.estimated]).toEqual([1149, 1024, 353, 0])
  })
})
