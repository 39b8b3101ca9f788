import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * A Responses WebSocket whose upstream accepts the upgrade with headers past 16 KiB (Node's
 * default for the answer to an HTTP request: a gateway's long policy or cookie headers): the
 * socket is relayed, with those headers, as an HTTP call's answer is (up to 256 KiB), not
 * answered 502 "Could not reach".
 */

const BIG = 'p'.repeat(40 * 1024)
let up: WsUpstream
let t: TestServer

beforeAll(async () => {
  up = await startWsUpstream({ onConnection: (ws) => ws.on('message', (m) => ws.send(String(m))), headers: () => [`x-gateway-policy: ${BIG}`] })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

describe('a WebSocket upgrade the upstream accepts with headers past 16 KiB', () => {
  it('is relayed, its headers passed on', async () => {
    const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-proj-big-upgrade-0001' }, maxHeaderSize: 1024 * 1024 })
    const got = await new Promise<{ status: number; policy?: string }>((resolve) => {
      ws.on('upgrade', (res) => resolve({ status: 101, policy: res.headers['x-gateway-policy'] as string | undefined }))
      ws.on('unexpected-response', (_req, res) => resolve({ status: res.statusCode ?? 0 }))
      ws.on('error', () => resolve({ status: 0 }))
    })
    ws.terminate()
    expect(got.status).toBe(101)
    expect(got.policy).toBe(BIG)
  })
})
