import { afterAll, beforeAll } from 'vitest'
import WebSocket from 'ws'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from './http'
import { ledgerRows } from './ledger-rows'
import { type TestServer, startTestServer } from './server'
import { type WsUpstream, type WsUpstreamOptions, startWsUpstream } from './ws-upstream'

/**
 * The set-up the WebSocket relay tests share (OpenAI's Realtime API, Gemini's Live API): a socket
 * upstream with a server in front of it, a client socket on that server, and the ledger rows its
 * calls leave.
 */

/** Gemini's Live API socket (v1beta), behind the server's /gemini prefix. */
export const LIVE_PATH = '/gemini/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent'

/**
 * A socket upstream (`upstream` says what it does with each socket) and a server pointed at it,
 * started before the file's tests and stopped after them. Read `up` and `t` inside the tests.
 */
export function serverOverWsUpstream(
  upstream: WsUpstreamOptions,
  config: Record<string, any> = {},
  opts?: Parameters<typeof startTestServer>[3],
): { readonly up: WsUpstream; readonly t: TestServer } {
  let up: WsUpstream | undefined
  let t: TestServer | undefined
  beforeAll(async () => {
    up = await startWsUpstream(upstream)
    t = await startTestServer(config, up.url, undefined, opts)
  })
  afterAll(async () => {
    await t?.cleanup()
    await up?.close()
  })
  return {
    get up() {
      if (!up) throw new Error('the socket upstream is not started yet: read it inside a test')
      return up
    },
    get t() {
      if (!t) throw new Error('the test server is not started yet: read it inside a test')
      return t
    },
  }
}

/** A client's socket on the server under test. */
export interface ClientSocket {
  ws: WebSocket
  /** Every message it got, parsed as JSON, in order. */
  frames: any[]
  /** Its close, with the code and reason it came with. */
  closed: Promise<{ code: number; reason: string }>
}

/** Opens a socket on the server at `path` (with its query); resolves once open, rejects on an error (a refused upgrade too). */
export function openSocket(t: TestServer, path: string, o: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<ClientSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}${path}`, o.protocols ?? [], { headers: o.headers })
    const frames: any[] = []
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: String(reason) })))
    ws.on('message', (d) => frames.push(JSON.parse(String(d))))
    ws.on('open', () => resolve({ ws, frames, closed }))
    ws.on('error', reject)
  })
}

/** The ledger rows recorded after the first `before`, once there are exactly `n`. */
export function rowsAfter(t: TestServer, before: number, n: number): Promise<any[]> {
  return eventually(() => {
    const r = ledgerRows(t.dbFile).slice(before)
    return r.length === n ? r : undefined
  }, 10_000) as Promise<any[]>
}

/** The ledger rows recorded after the first `before`, once there are `n` or more. */
export function rowsAfterAtLeast(t: TestServer, before: number, n: number): Promise<any[]> {
  return eventually(() => {
    const r = ledgerRows(t.dbFile).slice(before)
    return r.length >= n ? r : undefined
  }, 10_000) as Promise<any[]>
}

/** Every row recorded under `key` so far (the ledger's queue written first). */
export function rowsOfKey(t: TestServer, key: string): any[] {
  t.server.ledger.flush()
  return ledgerRows(t.dbFile).filter((r: any) => r.api_key_hash === hashKey(key))
}

/** The rows recorded under `key`, once there are `n` or more. */
export function keyRowsAtLeast(t: TestServer, key: string, n: number): Promise<any[]> {
  return eventually(() => {
    const r = rowsOfKey(t, key)
    return r.length >= n ? r : undefined
  }, 10_000) as Promise<any[]>
}
