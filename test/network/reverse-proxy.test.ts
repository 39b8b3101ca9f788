import Anthropic from '@anthropic-ai/sdk'
import { readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type PrivateCa, makePrivateCa, startHttpsUpstream } from './support'

/**
 * Burnrate serves plain HTTP; the README's team and PostgreSQL setups put it behind a reverse
 * proxy that ends TLS. An Anthropic batch answer's `results_url` is pointed back at Burnrate as
 * the client reached it: over HTTPS, that must be an https:// address, or the SDK
 * (`messages.batches.results`) sends its x-api-key in clear text to port 80 of the public name,
 * or cannot read the results at all.
 */

const KEY = 'sk-ant-tls-front-aaaaaaaa'
const BATCH = 'msgbatch_01TlsFrontAaaaaaaaaaaa'
const message = {
  id: 'msg_01TlsFront', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022',
  content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
}
const batch = {
  id: BATCH, type: 'message_batch', processing_status: 'ended',
  request_counts: { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 0 },
  ended_at: new Date().toISOString(), created_at: '2026-11-28T09:00:00Z', expires_at: '2026-11-29T09:00:00Z',
  archived_at: null, cancel_initiated_at: null,
  results_url: `https://api.anthropic.com/v1/messages/batches/${BATCH}/results`,
}

describe('behind a reverse proxy that ends TLS', () => {
  let ca: PrivateCa
  let upstream: MockUpstream
  let t: TestServer
  let front: Awaited<ReturnType<typeof startHttpsUpstream>>
  let dispatcher: Agent

  beforeAll(async () => {
    ca = makePrivateCa()
    dispatcher = new Agent({ connect: { ca: readFileSync(ca.caFile) } })
    upstream = await startMockUpstream((req): Reply => {
      const path = req.url.split('?')[0]
      if (path === `/v1/messages/batches/${BATCH}/results`) {
        return { headers: { 'content-type': 'application/binary' }, body: JSON.stringify({ custom_id: 'q-1', result: { type: 'succeeded', message } }) + '\n' }
      }
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) }
    })
    t = await startTestServer({ server: { allowed_hosts: ['localhost'] } }, upstream.url)
    const back = new URL(t.url)
    // As nginx with `proxy_set_header Host $host; proxy_set_header X-Forwarded-Proto $scheme;`.
    front = await startHttpsUpstream(ca, (req, res) => {
      const headers = { ...req.headers, 'x-forwarded-proto': 'https', 'x-forwarded-for': '127.0.0.1' }
      const up = http.request({ host: back.hostname, port: back.port, method: req.method, path: req.url, headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers)
        ur.pipe(res)
      })
      up.on('error', () => res.destroy())
      req.pipe(up)
    })
  })
  afterAll(async () => {
    await front?.close()
    await dispatcher?.close()
    await t?.cleanup()
    await upstream?.close()
    if (ca) rmSync(ca.dir, { recursive: true, force: true })
  })

  it("the SDK on https://… is given an https:// results address, and reads the batch's results through the proxy", async () => {
    const client = new Anthropic({
      apiKey: KEY,
      baseURL: front.url,
      maxRetries: 0,
      fetch: undiciFetch as unknown as typeof fetch,
      fetchOptions: { dispatcher } as object,
    })
    const got = await client.messages.batches.retrieve(BATCH)
    expect(got.results_url).toBe(`${front.url}/v1/messages/batches/${BATCH}/results`)
    const seen: string[] = []
    for await (const r of await client.messages.batches.results(BATCH)) seen.push(`${r.custom_id}:${r.result.type}`)
    expect(seen).toEqual(['q-1:succeeded'])
    const recorded = await eventually(() => ledgerRows(t.dbFile).find((r) => r.endpoint === 'batch.messages'))
    expect(recorded).toMatchObject({ response_id: message.id, input_tokens: 10, output_tokens: 5 })
  })

  it('takes the standard Forwarded header too; a client reaching Burnrate directly keeps http://', async () => {
    const get = (headers: Record<string, string>) =>
      request(`${t.url}/v1/messages/batches/${BATCH}`, { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', ...headers } })
    const host = new URL(t.url).host
    expect((await get({ forwarded: 'for=192.0.2.60;proto=https' })).json().results_url).toBe(`https://${host}/v1/messages/batches/${BATCH}/results`)
    expect((await get({})).json().results_url).toBe(`http://${host}/v1/messages/batches/${BATCH}/results`)
    // Only http or https is ever put in the address.
    expect((await get({ 'x-forwarded-proto': 'javascript' })).json().results_url).toBe(`http://${host}/v1/messages/batches/${BATCH}/results`)
  })
})
