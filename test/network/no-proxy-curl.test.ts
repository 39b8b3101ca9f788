import { execFile, spawnSync } from 'node:child_process'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { proxyRule } from '../../src/main/http/network'

/**
 * NO_PROXY as curl reads it, where Burnrate's rule (src/main/http/network.ts) read it otherwise:
 * a trailing dot on an entry or on the host (a fully qualified name) is ignored; an IPv6 address
 * matches however it is written (the URL writes `::ffff:10.0.0.1` as `::ffff:a00:1`); an IP
 * address is matched whole, never as a name's subdomain (`0.0.1` does not take in 10.0.0.1).
 * Each case is asked of curl too, when it is installed: a proxy on 127.0.0.1 logs whether curl
 * came to it.
 */

const CASES: { noProxy: string; url: string; direct: boolean }[] = [
  { noProxy: 'example.com.', url: 'http://api.example.com/', direct: true },
  { noProxy: 'example.com', url: 'http://example.com./', direct: true },
  { noProxy: '.example.com.', url: 'http://api.example.com./', direct: true },
  { noProxy: '::ffff:10.0.0.1', url: 'http://[::ffff:10.0.0.1]/', direct: true },
  { noProxy: '0.0.1', url: 'http://10.0.0.1/', direct: false },
  { noProxy: '.0.1', url: 'http://10.0.0.1/', direct: false },
  // Unchanged: a name and its subdomains, an address written as the URL writes it.
  { noProxy: 'example.com', url: 'http://api.example.com/', direct: true },
  { noProxy: 'example.com', url: 'http://notexample.com/', direct: false },
  { noProxy: '10.0.0.1', url: 'http://10.0.0.1/', direct: true },
]

describe('NO_PROXY matching, as curl does it', () => {
  for (const c of CASES) {
    it(`${c.noProxy} sends ${c.url} ${c.direct ? 'directly' : 'through the proxy'}`, () => {
      const rule = proxyRule({}, { HTTP_PROXY: 'http://p:3128', HTTPS_PROXY: 'http://p:3128', NO_PROXY: c.noProxy })!
      expect(rule(c.url)).toBe(c.direct ? null : 'http://p:3128')
    })
  }
})

const hasCurl = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0

describe.skipIf(!hasCurl)('curl agrees (the cases above asked of curl itself)', () => {
  let proxy: net.Server
  let proxyUrl: string
  const came: string[] = []
  beforeAll(async () => {
    // Answers every request 502 at once and logs its target: curl came to the proxy.
    proxy = net.createServer((s) => {
      s.once('data', (d) => {
        came.push(d.toString('latin1').split(' ')[1] ?? '')
        s.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
      })
      s.on('error', () => {})
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((r) => proxy.close(r))
  })

  for (const c of CASES) {
    it(`curl sends ${c.url} ${c.direct ? 'directly' : 'through the proxy'} with NO_PROXY=${c.noProxy}`, async () => {
      const before = came.length
      // Direct, the host is not reached (no such name, or an address nothing answers): curl gives up on its own.
      await new Promise<void>((resolve) => {
        const env = { ...process.env, http_proxy: proxyUrl, HTTP_PROXY: proxyUrl, NO_PROXY: c.noProxy, no_proxy: c.noProxy }
        execFile('curl', ['-s', '-o', '/dev/null', '--connect-timeout', '2', '-m', '3', c.url], { env }, () => resolve())
      })
      expect(came.length > before).toBe(!c.direct)
    })
  }
})
