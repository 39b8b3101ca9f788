import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * One call crossing 50% and the limit announces both, in order, and both were POSTed at once,
 * each on a connection of its own: when the first connection was slower to open (a longer TLS
 * handshake, a packet lost), the webhook got "limit reached" before the 50% warning. The next
 * alert to a webhook now waits for the first attempt of the one before it.
 */

/** A webhook behind a path whose first connection opens `delayMs` late; the thresholds it got, in order. */
async function slowFirstConnection(delayMs: number) {
  const got: number[] = []
  const hook = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')).threshold_pct)
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r))
  const port = (hook.address() as AddressInfo).port
  let connections = 0
  const front = net.createServer((c) => {
    c.pause()
    setTimeout(
      () => {
        const up = net.connect(port, '127.0.0.1', () => {
          c.pipe(up)
          up.pipe(c)
          c.resume()
        })
        c.on('close', () => up.destroy())
      },
      connections++ === 0 ? delayMs : 0,
    )
  })
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    got,
    close: async () => {
      hook.closeAllConnections()
      await new Promise<void>((r) => hook.close(() => r()))
      await new Promise<void>((r) => front.close(() => r()))
    },
  }
}

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

describe('thresholds one call crosses together (SQLite)', () => {
  it('reach a webhook in order when its first connection is the slower one', async () => {
    const hook = await slowFirstConnection(300)
    const t = await startTestServer(
      {
        alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }] },
        budgets: { rules: [{ api_key_pattern: 'sk-ord-*', daily_limit_usd: NANO_COST * (1 - 1e-9), action: 'warn', alert_at_pct: [0.5, 1] }] },
      },
      upstream.url,
    )
    try {
      expect((await chat(t, 'sk-ord-aaaaaaaaaaaa-0001')).status).toBe(200)
      await eventually(() => hook.got.length === 2, 10_000)
      expect(hook.got).toEqual([0.5, 1])
    } finally {
      await t.cleanup()
      await hook.close()
    }
  })
})
