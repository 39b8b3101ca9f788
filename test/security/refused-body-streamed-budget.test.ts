import { describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { answerWhileSending, FAR_PAST, streamBody } from '../support/refused-stream'
import { serversPerTest } from '../support/server'

/**
 * A proxied call whose body goes upstream as it comes, refused by a budget on its headers, has its
 * body read and dropped only so far (1 MiB), the connection closed past that, as every refusal
 * (refused-body-streamed.test.ts). Builds before this one left the body to Node, which read it to
 * its end to keep the connection, however long.
 */
const start = serversPerTest()

describe('a streamed Message Batch a budget refuses', () => {
  it('is answered 429, and its connection closed as the body goes on', async () => {
    const upstream = await start.upstream(() => ({ headers: { 'content-type': 'application/json' }, body: '{"id":"msgbatch_01","type":"message_batch"}' }))
    const rule = { api_key_pattern: 'sk-ant-refused-*', requests_per_minute: 1, action: 'block' }
    const t = await start.server({ timezone: 'UTC', budgets: { rules: [rule] } }, upstream.url, undefined, { create: { apiPreloadMs: false } })
    const port = Number(new URL(t.url).port)
    const headers = { 'content-type': 'application/json', 'x-api-key': 'sk-ant-refused-0001', 'anthropic-version': '2023-06-01' }
    // The minute's one request.
    const first = await request(`${t.url}/anthropic/v1/messages/batches`, { method: 'POST', headers, body: '{"requests":[]}' })
    expect(first.status).toBe(200)
    const head = `POST /anthropic/v1/messages/batches HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}`
    const r = await answerWhileSending(port, head)
    expect(r.status).toBe('HTTP/1.1 429 Too Many Requests')
    expect(r.body.error.type).toBe('rate_limited')
    const streamed = await streamBody(port, head, true)
    expect(streamed.status).toBe('HTTP/1.1 429 Too Many Requests')
    expect(streamed.closed).toBe(true)
    expect(streamed.sent).toBeLessThan(FAR_PAST)
    expect(upstream.requests).toHaveLength(1)
  })
})
