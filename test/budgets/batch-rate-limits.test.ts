import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from '../providers/ledger'

/**
 * A Batch API's requests stored when a client reads the results file are money (the daily and
 * monthly limits count them) but never this minute's tokens or requests (README: Budgets): they
 * ran at the batch's pace. Counted at the read, three requests of 1,502 tokens made a
 * `tokens_per_minute: 2000` rule refuse the key's next call.
 */

const small = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } }
let created = 0
function output(prefix: string): Buffer {
  const chat = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), created }
  const line = (id: string) => JSON.stringify({ id, custom_id: id, response: { status_code: 200, request_id: `req_${id}`, body: { ...chat, id: `chatcmpl-${id}` } }, error: null })
  // Three requests of 1,149 + 353 tokens each.
  return Buffer.from([1, 2, 3].map((i) => line(`batch_req_${prefix}${i}`)).join('\n') + '\n')
}

const CONFIG = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rl-*', tokens_per_minute: 2000, daily_limit_usd: 1000, action: 'block' }] } }

let upstream: MockUpstream
let file = ''
beforeAll(async () => {
  upstream = await startMockUpstream((req) =>
    req.url.includes('/files/')
      ? { headers: { 'content-type': 'application/octet-stream' }, body: output(file) }
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(small) },
  )
})
afterAll(async () => {
  await upstream.close()
})

async function readResults(t: TestServer, key: string, name: string): Promise<void> {
  file = name
  const r = await request(`${t.url}/v1/files/file-${name}/content`, { headers: { authorization: `Bearer ${key}` } })
  expect(r.status).toBe(200)
  await eventually(() => rows(t).filter((c) => c.endpoint === 'batch.chat.completions' && c.response_id?.includes(name)).length === 3)
}

function chat(t: TestServer, key: string) {
  return request(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
  })
}

describe('a batch results read and the per-minute limits (SQLite)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer(CONFIG, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
  })

  it('requests that ran ten minutes ago: the key\'s next call goes through', async () => {
    created = Math.floor(Date.now() / 1000) - 600
    const key = 'sk-rl-batch-old-aaaaaaaaaa'
    await readResults(t, key, 'old')
    const call = await chat(t, key)
    expect(call.status, call.text).toBe(200)
  })

  it('requests that ran this minute, as the ledger reads them back after a restart: the next call goes through both times', async () => {
    created = Math.floor(Date.now() / 1000)
    const key = 'sk-rl-batch-now-aaaaaaaaaa'
    await readResults(t, key, 'now')
    // Their spend counts.
    const spent = rows(t).filter((c) => c.endpoint === 'batch.chat.completions' && c.response_id?.includes('now')).reduce((a, c) => a + c.cost_usd, 0)
    expect(spent).toBeGreaterThan(0)
    expect((await chat(t, key)).status).toBe(200)
    t = await t.restart()
    const call = await chat(t, key)
    expect(call.status, call.text).toBe(200)
  })
})
