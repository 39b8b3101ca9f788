import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

/**
 * Burnrate behind a reverse proxy that serves it under a path (`https://gw.example/burnrate/…`),
 * stripping the path before passing the call on and saying so in `X-Forwarded-Prefix` (Traefik's
 * StripPrefix does; nginx with `proxy_set_header X-Forwarded-Prefix /burnrate;`). An Anthropic
 * batch answer's `results_url` pointed at `…/v1/messages/batches/{id}/results` without the path:
 * the SDK fetched an address the proxy does not serve, and the results (and the requests they
 * bill) never came through Burnrate.
 */

const KEY = 'sk-ant-subpath-aaaaaaaaaa'
const BATCH = 'msgbatch_01SubpathAaaaaaaaaaa'
const message = {
  id: 'msg_01Subpath', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022',
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
const PREFIX = '/burnrate'

describe('behind a reverse proxy that serves Burnrate under a path', () => {
  let upstream: MockUpstream
  let t: TestServer
  let front: http.Server
  let frontUrl = ''

  beforeAll(async () => {
    upstream = await startMockUpstream((req): Reply => {
      if (req.url.split('?')[0] === `/v1/messages/batches/${BATCH}/results`) {
        return { headers: { 'content-type': 'application/binary' }, body: JSON.stringify({ custom_id: 'q-1', result: { type: 'succeeded', message } }) + '\n' }
      }
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) }
    })
    t = await startTestServer({ server: { allowed_hosts: ['localhost'] } }, upstream.url)
    const back = new URL(t.url)
    // Only what is under the path is Burnrate's; the path is stripped, and said.
    front = http.createServer((req, res) => {
      const url = req.url ?? '/'
      if (!url.startsWith(`${PREFIX}/`)) {
        res.writeHead(404).end('not here')
        return
      }
      const headers = { ...req.headers, 'x-forwarded-prefix': PREFIX }
      const up = http.request({ host: back.hostname, port: back.port, method: req.method, path: url.slice(PREFIX.length), headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers)
        ur.pipe(res)
      })
      up.on('error', () => res.destroy())
      req.pipe(up)
    })
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
    frontUrl = `http://localhost:${(front.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => front?.close(resolve))
    await t?.cleanup()
    await upstream?.close()
  })

  const headers = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }

  it("gives the batch's results address under the path, and its results are read and recorded through it", async () => {
    const got = await request(`${frontUrl}${PREFIX}/v1/messages/batches/${BATCH}`, { headers })
    expect(got.status).toBe(200)
    const resultsUrl = got.json().results_url as string
    expect(resultsUrl).toBe(`${frontUrl}${PREFIX}/v1/messages/batches/${BATCH}/results`)
    const results = await request(resultsUrl, { headers })
    expect(results.status).toBe(200)
    const recorded = await eventually(() => ledgerRows(t.dbFile).find((r) => r.endpoint === 'batch.messages'))
    expect(recorded).toMatchObject({ response_id: message.id, input_tokens: 10, output_tokens: 5 })
  })

  it('puts only a plain path in the address', async () => {
    const get = (prefix: string) => request(`${t.url}/v1/messages/batches/${BATCH}`, { headers: { ...headers, 'x-forwarded-prefix': prefix } })
    const host = new URL(t.url).host
    expect((await get('/a/b/, /c')).json().results_url).toBe(`http://${host}/a/b/v1/messages/batches/${BATCH}/results`)
    for (const bad of ['burnrate', '//evil.example', '/a"b', '/a/../b', 'https://evil.example/x']) {
      expect((await get(bad)).json().results_url, bad).toBe(`http://${host}/v1/messages/batches/${BATCH}/results`)
    }
  })
})
