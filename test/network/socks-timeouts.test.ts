import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { PLAIN_HOST, startLoggedServer, startSocks5Proxy } from './support'

/**
 * Through a SOCKS5 proxy, a call is timed by upstream.first_byte_timeout_ms and
 * upstream.idle_timeout_ms, as every other call is: undici's SOCKS5 agent (which carried them
 * before) made its own pool per upstream with undici's defaults (300 s for the answer's headers,
 * 300 s between its body's chunks), which cut a long non-streamed answer at 5 minutes (a 504
 * saying the proxy did not answer its CONNECT request) and a stream quiet for 5 minutes in the
 * middle, whatever the config said.
 *
 * Five minutes pass on undici's own clock only (its timers module's test hook, `tick`): the
 * server's own deadlines (first byte 600 s by default) see the real time.
 */

const require = createRequire(import.meta.url)
const undiciTimers = require('undici/lib/util/timers.js') as { tick(ms: number): void }

/** Five minutes and more on undici's clock (twice: a timer made since the last tick starts on the first). */
function fiveMinutesPass(): void {
  undiciTimers.tick(301_000)
  undiciTimers.tick(301_000)
}

const ANSWER = JSON.stringify({
  id: 'chatcmpl-socks',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

let upstream: http.Server
let port = 0
/** The answer of the call under way waits for this (its headers too, or only the rest of its body). */
let release: () => void = () => {}
let arrived = 0
let mode: 'late-headers' | 'quiet-body' = 'late-headers'

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      arrived++
      if (mode === 'late-headers') {
        release = () => res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER)
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write(ANSWER.slice(0, 20))
      release = () => res.end(ANSWER.slice(20))
    })
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  port = (upstream.address() as AddressInfo).port
})

afterAll(async () => {
  upstream.closeAllConnections()
  await new Promise<void>((r) => upstream.close(() => r()))
})

describe('a call through a SOCKS5 proxy', () => {
  for (const m of ['late-headers', 'quiet-body'] as const) {
    it(`is not cut by undici's 5-minute default when ${m === 'late-headers' ? 'its answer starts' : 'its body goes quiet'} later (the config's timeouts are longer)`, async () => {
      const socks = await startSocks5Proxy()
      const s = await startLoggedServer({
        upstream: { proxy: socks.url, first_byte_timeout_ms: 900_000, idle_timeout_ms: 900_000 },
        providers: { openai: { base_url: `http://${PLAIN_HOST}:${port}/v1` } },
      })
      try {
        mode = m
        const before = arrived
        const call = postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        await eventually(() => arrived > before)
        if (m === 'quiet-body') await eventually(() => s.server.proxy.active === 1)
        fiveMinutesPass()
        release()
        const r = await call
        expect(r.status, r.text).toBe(200)
        expect(JSON.parse(r.text).usage.completion_tokens).toBe(5)
        expect(socks.targets).toEqual([`${PLAIN_HOST}:${port}`])
      } finally {
        await s.stop()
        await socks.close()
      }
    })
  }
})
