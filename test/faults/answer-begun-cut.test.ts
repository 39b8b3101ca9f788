import Anthropic from '@anthropic-ai/sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type RawUpstream, startRawUpstream } from '../support/raw-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An upstream that answered and then failed (reset, or went silent) before the answer's body
 * went on: the client must see the answer begin and break, as it would without Burnrate. Told
 * instead that nothing came (a 502 or 504 of Burnrate's, or a connection closed before any
 * status), the agents' SDKs send the call again, and a call the provider had (a batch it created,
 * a prompt it read) is made, and billed, a second time.
 */

/** What the upstream does with each request: it writes `head` (and `body`), then resets or stalls. */
let plan: { head: string; body?: string; then: 'reset' | 'stall' } = { head: '', then: 'reset' }
let received: string[] = []
let upstream: RawUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startRawUpstream((sock, request) => {
    received.push(request.slice(0, request.indexOf('\r\n')))
    sock.write(plan.head + (plan.body ?? ''), () => {
      // The answer so far is on its way; then the upstream fails.
      if (plan.then === 'reset') setTimeout(() => sock.destroy(), 50)
    })
  })
  t = await startTestServer({ upstream: { connect_timeout_ms: 2000, first_byte_timeout_ms: 5000, idle_timeout_ms: 500 } }, upstream.url)
})

afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

async function rowsOf(endpoint: string, n: number): Promise<any[]> {
  return eventually<any[] | undefined>(() => {
    const r = ledgerRows(t.dbFile, `endpoint = '${endpoint}'`)
    return r.length >= n ? r : undefined
  }) as Promise<any[]>
}

const BATCH = JSON.stringify({
  id: 'msgbatch_01',
  type: 'message_batch',
  processing_status: 'in_progress',
  request_counts: { processing: 1, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
  ended_at: null,
  created_at: '2026-11-28T09:00:00Z',
  expires_at: '2026-11-29T09:00:00Z',
  results_url: null,
})
const batchHead = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${BATCH.length}\r\n\r\n`
const REQUESTS = [{ custom_id: 'q-1', params: { model: 'claude-3-5-sonnet-20240620', max_tokens: 5, messages: [{ role: 'user' as const, content: 'hi' }] } }]

describe('an upstream that answered, then failed before its answer went on', () => {
  it('a batch answer cut while held to be rewritten: the SDK sees it break and creates no second batch', async () => {
    plan = { head: batchHead, body: BATCH.slice(0, 40), then: 'reset' }
    received = []
    const client = new Anthropic({ apiKey: 'sk-ant-cut-batch-aaaa', baseURL: t.url, maxRetries: 2 })
    await expect(client.messages.batches.create({ requests: REQUESTS })).rejects.toThrow()
    // One batch created upstream, not three: a 502 is retried by the SDK, and so, from its 1.17,
    // is a 2xx answer that breaks part-way, unless it says x-should-retry: false.
    expect(received).toEqual(['POST /v1/messages/batches HTTP/1.1'])
    const [row] = await rowsOf('messages.batches.create', 1)
    expect(row).toMatchObject({ status: 502, error: 'upstream_reset', cost_usd: 0 })
  })

  it('a batch answer that stalls while held: cut as a stalled answer, not a 504 the SDK sends again', async () => {
    plan = { head: batchHead, body: BATCH.slice(0, 40), then: 'stall' }
    received = []
    const client = new Anthropic({ apiKey: 'sk-ant-stall-batch-aaaa', baseURL: t.url, maxRetries: 2 })
    await expect(client.messages.batches.create({ requests: REQUESTS })).rejects.toThrow()
    expect(received).toEqual(['POST /v1/messages/batches HTTP/1.1'])
    const rows = await rowsOf('messages.batches.create', 2)
    expect(rows[1]).toMatchObject({ status: 504, error: 'upstream_stalled', cost_usd: 0 })
  })

  it('a held batch answer cut on its way is sent with x-should-retry: false; a GET of one is left to the SDK to repeat', async () => {
    plan = { head: batchHead, body: BATCH.slice(0, 40), then: 'reset' }
    received = []
    const post = await fetch(`${t.url}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-ant-cut-batch-bbbb', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ requests: REQUESTS }),
    })
    expect(post.status).toBe(200)
    expect(post.headers.get('x-should-retry')).toBe('false')
    await expect(post.text()).rejects.toThrow()

    // Reading a batch again costs nothing and changes nothing: the SDK may repeat it.
    received = []
    const client = new Anthropic({ apiKey: 'sk-ant-cut-batch-cccc', baseURL: t.url, maxRetries: 1 })
    await expect(client.messages.batches.retrieve('msgbatch_01')).rejects.toThrow()
    expect(received).toEqual(['GET /v1/messages/batches/msgbatch_01 HTTP/1.1', 'GET /v1/messages/batches/msgbatch_01 HTTP/1.1'])
  })

  it('a stream reset right after its status, before any event: the client sees the 200, and the SDK does not send the call again', async () => {
    plan = { head: 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n', then: 'reset' }
    received = []
    const client = new Anthropic({ apiKey: 'sk-ant-cut-stream-aaaa', baseURL: t.url, maxRetries: 2 })
    const stream = async () => {
      const s = await client.messages.create({ model: 'claude-3-5-sonnet-20240620', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] })
      for await (const _ of s) {
        // nothing comes
      }
    }
    await expect(stream()).rejects.toThrow()
    expect(received).toEqual(['POST /v1/messages HTTP/1.1'])
    const [row] = await rowsOf('messages', 1)
    expect(row).toMatchObject({ status: 502, error: 'upstream_reset', streamed: 1 })
  })
})
