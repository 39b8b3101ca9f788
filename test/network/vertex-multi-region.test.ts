import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { startLoggedServer } from './support'

/**
 * Vertex AI's multi-region locations `us` and `eu` (Claude's and Gemini's "multi-region endpoints":
 * data kept in one geography, capacity pooled across its regions) are served by their own hosts,
 * `aiplatform.us.rep.googleapis.com` and `aiplatform.eu.rep.googleapis.com`, where Anthropic's
 * Vertex SDK (`region: "us"`) and Google's Gen AI SDK (`MULTI_REGIONAL_LOCATIONS`) send them. With
 * no `providers.vertex.base_url`, Burnrate sends such a call there too. Seen here through a
 * corporate proxy that logs the host each CONNECT names (and refuses it: the host is not reached).
 */

async function loggingProxy(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = []
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '')
    res.writeHead(403).end()
  })
  server.on('connect', (req: http.IncomingMessage, socket: Socket) => {
    seen.push(req.url ?? '')
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

const GOOGLE = { authorization: 'Bearer ya29.a0-burnrate-multi-region-token-01' }

describe('Vertex AI multi-region locations (us, eu)', () => {
  it("each goes to its own host (aiplatform.{us,eu}.rep.googleapis.com), recorded as the model call it is", async () => {
    const proxy = await loggingProxy()
    const s = await startLoggedServer({ upstream: { proxy: proxy.url, connect_timeout_ms: 2000 } })
    try {
      for (const loc of ['us', 'eu']) {
        const res = await postJson(
          `${s.url}/vertex/v1/projects/p/locations/${loc}/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`,
          { anthropic_version: 'vertex-2023-10-16', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
          GOOGLE,
        )
        // Refused by the proxy: never the 404 of a location Burnrate names no host for.
        expect(res.status, res.text).not.toBe(404)
        expect(proxy.seen).toContain(`aiplatform.${loc}.rep.googleapis.com:443`)
      }
      const rows = await eventually(() => {
        const r = ledgerRows(s.dbFile)
        return r.length >= 2 ? r : undefined
      })
      for (const row of rows ?? []) expect(row).toMatchObject({ provider: 'vertex', endpoint: 'messages', model: 'claude-sonnet-4-5@20250929' })
    } finally {
      await s.stop()
      await proxy.close()
    }
  }, 30_000)

  it('a location that is neither a region nor a multi-region still names no host', async () => {
    const s = await startLoggedServer({})
    try {
      for (const loc of ['usa', 'us.evil.example', 'eu-']) {
        const res = await postJson(`${s.url}/vertex/v1/projects/p/locations/${loc}/publishers/anthropic/models/m:rawPredict`, { messages: [] }, GOOGLE)
        expect(res.status, loc).toBe(404)
      }
    } finally {
      await s.stop()
    }
  })
})
