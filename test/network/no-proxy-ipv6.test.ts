import { execFile, execFileSync, spawnSync } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { EnvHttpProxyAgent, fetch } from 'undici'
import { noProxyEntries } from '../../src/shared/no-proxy'

/**
 * Burnrate listening on IPv6 loopback (a `::` listen is reached at http://[::1]:port): the NO_PROXY
 * entries its setup lines add must keep an agent's calls for it away from a proxy in each HTTP
 * stack the agents use. Node's undici (Claude Code, Gemini CLI) compares the bracketed form;
 * Python's requests (Aider), curl and Rust's reqwest (Codex) the bare address. The proxy here is
 * a port nothing listens on: a call sent to it fails.
 */

let server: http.Server
let url: string
const DEAD_PROXY = 'http://127.0.0.1:9'

beforeAll(async () => {
  server = http.createServer((_req, res) => res.end('burnrate'))
  await new Promise<void>((r) => server.listen(0, '::1', r))
  url = `http://[::1]:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((r) => server.close(r))
})

it("undici's EnvHttpProxyAgent sends the call to [::1] directly", async () => {
  const agent = new EnvHttpProxyAgent({ httpProxy: DEAD_PROXY, httpsProxy: DEAD_PROXY, noProxy: noProxyEntries(url) })
  try {
    const res = await fetch(`${url}/api/health`, { dispatcher: agent })
    expect(await res.text()).toBe('burnrate')
  } finally {
    await agent.close()
  }
})

const hasRequests = spawnSync('python3', ['-c', 'import requests'], { stdio: 'ignore' }).status === 0
it.skipIf(!hasRequests)("Python requests' proxy bypass (Aider's stack) exempts [::1]", () => {
  const out = execFileSync('python3', ['-c', 'import sys; from requests.utils import should_bypass_proxies as s; print(s(sys.argv[1], no_proxy=sys.argv[2]))', `${url}/v1`, noProxyEntries(url)], { encoding: 'utf8' })
  expect(out.trim()).toBe('True')
})

const hasCurl = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0
it.skipIf(!hasCurl)('curl sends the call to [::1] directly', async () => {
  // Asynchronously: the server answering it runs in this process.
  const r = await new Promise<{ status: number | null; body: string }>((resolve) => {
    execFile('curl', ['-s', '-m', '10', '-o', '-', `${url}/`], { encoding: 'utf8', env: { ...process.env, http_proxy: DEAD_PROXY, HTTP_PROXY: DEAD_PROXY, NO_PROXY: noProxyEntries(url), no_proxy: noProxyEntries(url) } }, (err, stdout) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, body: stdout }),
    )
  })
  expect(r).toEqual({ status: 0, body: 'burnrate' })
})

it('IPv4 loopback keeps both of its names', () => {
  expect(noProxyEntries('http://127.0.0.1:8787')).toBe('127.0.0.1,localhost')
})
