import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEgress } from '../../src/main/http/egress'
import { request as send } from '../../src/main/http/request'
import { eventually } from '../support/http'
import { SECURE_HOST } from './support'

/**
 * Burnrate's own calls out (a price update, an alert webhook, a team report) through a SOCKS5
 * proxy that grants the tunnel and then passes nothing on: each call gives up at its own timeout,
 * and the connection it was opening is closed too, as a direct one's is by undici's connect timeout
 * (10 s). undici's SOCKS5 agent waited for the TLS handshake inside the tunnel without limit, so
 * each attempt (a webhook's retries, a price check every few hours) left a connection to the
 * proxy open for good.
 */

let proxy: net.Server
let proxyUrl: string
const held = new Set<net.Socket>()
/** Tunnels granted so far. */
let granted = 0

beforeAll(async () => {
  proxy = net.createServer((client) => {
    held.add(client)
    client.on('close', () => held.delete(client))
    client.on('error', () => {})
    client.on('end', () => client.destroy())
    client.once('data', () => {
      client.write(Buffer.from([5, 0]))
      client.once('data', () => {
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]))
        granted++
        client.resume()
      })
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `socks5://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const s of held) s.destroy()
  await new Promise<void>((r) => proxy.close(() => r()))
})

describe("Burnrate's own call through a SOCKS5 proxy whose tunnel passes nothing on", () => {
  it('fails at its own timeout, and the connection to the proxy is closed', async () => {
    const egress = createEgress({ proxy: proxyUrl })
    const url = `https://${SECURE_HOST}/hook`
    try {
      await expect(send(url, { method: 'POST', body: '{}', dispatcher: egress.for(url), signal: AbortSignal.timeout(300) })).rejects.toThrow()
      await eventually(() => granted === 1)
      await eventually(() => held.size === 0, 30_000)
    } finally {
      await egress.close()
    }
  }, 60_000)
})
