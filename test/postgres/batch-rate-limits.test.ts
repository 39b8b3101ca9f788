import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixtureJson } from '../support/fixtures'
import { request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'

/**
 * A Batch API's results read through instance A: the requests stored are money on every instance
 * but never requests sent upstream this minute (README: Budgets). Instance B counted each as one,
 * so a `requests_per_minute: 3` rule refused the key's next call on B for a minute.
 */

const KEY = 'sk-pgrl-batch-aaaaaaaaaa'
const RAN = Math.max(Math.floor(Date.now() / 1000) - 600, Math.floor(new Date().setUTCHours(0, 0, 0, 0) / 1000))
const chat = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), created: RAN }
const line = (id: string) => JSON.stringify({ id, custom_id: id, response: { status_code: 200, request_id: `req_${id}`, body: { ...chat, id: `chatcmpl-${id}` } }, error: null })
const OUTPUT = Buffer.from([1, 2, 3, 4, 5].map((i) => line(`batch_req_pgrl${i}`)).join('\n') + '\n')
const small = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } }

const h = usePostgres({
  upstream: (req) =>
    req.url.includes('/files/')
      ? { headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(small) },
})

describe('Batch results on PostgreSQL and requests_per_minute', () => {
  it("five batch requests read through A are not five requests of this minute on B: the key's next call on B goes through", async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgrl-*', requests_per_minute: 3, daily_limit_usd: 1000, action: 'block' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const store = h.store(url)
    const r = await request(`${a.url}/v1/files/file-pgrl/content`, { headers: { authorization: `Bearer ${KEY}` } })
    expect(r.status).toBe(200)
    await until('the five requests are stored', async () =>
      (await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE endpoint = 'batch.chat.completions'"))!.n === 5,
    )
    const total = (await store.get<{ c: number }>("SELECT SUM(cost_usd) AS c FROM calls WHERE endpoint = 'batch.chat.completions'"))!.c
    // B has heard of them (its meter shows their spend).
    const spentOnB = async () => {
      const body = (await request(`${b.url}/api/dashboard/budgets`)).json()
      return (body.rules?.find((x: any) => x.api_key_hash === hashKey(KEY))?.windows?.[0]?.spent_usd as number | undefined) ?? 0
    }
    await until("B's meter counts the batch's spend", async () => Math.abs((await spentOnB()) - total) < 1e-9)
    const call = await request(`${b.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    })
    expect(call.status, call.text).toBe(200)
  })
})
