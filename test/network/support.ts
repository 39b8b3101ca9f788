import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { DB_FILE } from '../../src/main/config/paths'
import type { Logger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'

/**
 * Host names only the test's CONNECT proxy resolves (to 127.0.0.1), as a corporate proxy reaches
 * hosts this machine cannot: a call to one arrives only through the proxy, and this machine's own
 * names (localhost, 127.0.0.1), which Burnrate always reaches directly, are not needed for it.
 */
export const SECURE_HOST = 'secure.burnrate.test'
export const PLAIN_HOST = 'plain.burnrate.test'
export const OUTSIDE_HOSTS = [SECURE_HOST, PLAIN_HOST]

/** A private CA and a certificate it signed for `localhost`, 127.0.0.1 and SECURE_HOST, made with openssl. */
export interface PrivateCa {
  dir: string
  caFile: string
  key: Buffer
  cert: Buffer
}

export function makePrivateCa(): PrivateCa {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-ca-'))
  const f = (n: string) => join(dir, n)
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=Burnrate Test CA')
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost')
  writeFileSync(f('ext.cnf'), `subjectAltName=DNS:localhost,DNS:${SECURE_HOST},IP:127.0.0.1\n`)
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', '2', '-extfile', f('ext.cnf'))
  return { dir, caFile: f('ca.pem'), key: readFileSync(f('server.key')), cert: readFileSync(f('server.pem')) }
}

/** An HTTPS upstream on 127.0.0.1 with the private CA's certificate. */
export async function startHttpsUpstream(ca: PrivateCa, handler: http.RequestListener): Promise<{ url: string; server: https.Server; close(): Promise<void> }> {
  const server = https.createServer({ key: ca.key, cert: ca.cert }, handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `https://localhost:${port}`,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/**
 * An HTTP proxy on loopback, as a corporate one is: CONNECT tunnels (logged in `targets`, by
 * `host:port`) and ordinary requests for an absolute http:// URI, forwarded (logged in
 * `forwarded`, by `host:port`, with the Proxy-Authorization each came with in `forwardedAuth`).
 * With `auth`, it asks for it (407) on both. `hosts` are names only it resolves (to 127.0.0.1), as a
 * corporate proxy reaches hosts this machine cannot: a call to one arrives only through the proxy.
 * With `connectPorts`, as Squid's default configuration (443 only), CONNECT to any other port is
 * refused 403.
 */
export async function startConnectProxy(
  auth?: { user: string; password: string } | null,
  hosts: readonly string[] = OUTSIDE_HOSTS,
  connectPorts?: readonly number[],
): Promise<{ url: string; port: number; targets: string[]; forwarded: string[]; forwardedAuth: (string | undefined)[]; refused: string[]; close(): Promise<void> }> {
  const targets: string[] = []
  const forwarded: string[] = []
  const forwardedAuth: (string | undefined)[] = []
  const refused: string[] = []
  const sockets = new Set<net.Socket>()
  const expected = auth ? `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}` : null
  const resolve = (host: string) => (host === 'localhost' || hosts.includes(host) ? '127.0.0.1' : host)
  const server = http.createServer((req, res) => {
    let url: URL
    try {
      url = new URL(req.url ?? '')
      if (url.protocol !== 'http:') throw new Error('not http')
    } catch {
      res.writeHead(400).end()
      return
    }
    if (expected && req.headers['proxy-authorization'] !== expected) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"', 'content-length': '0' }).end()
      return
    }
    forwarded.push(url.host)
    forwardedAuth.push(req.headers['proxy-authorization'])
    const headers = { ...req.headers }
    delete headers['proxy-authorization']
    delete headers['proxy-connection']
    const up = http.request({ host: resolve(url.hostname), port: Number(url.port) || 80, method: req.method, path: url.pathname + url.search, headers, maxHeaderSize: 1024 * 1024 }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  server.on('connection', (s: net.Socket) => sockets.add(s))
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client)
    if (expected && req.headers['proxy-authorization'] !== expected) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n')
      return
    }
    const [host, port] = (req.url ?? '').split(/:(?=\d+$)/)
    if (connectPorts && !connectPorts.includes(Number(port))) {
      refused.push(req.url ?? '')
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n')
      return
    }
    targets.push(req.url ?? '')
    const upstream = net.connect(Number(port), resolve(host), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    sockets.add(upstream)
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    targets,
    forwarded,
    forwardedAuth,
    refused,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/**
 * A SOCKS5 proxy on loopback (no authentication, CONNECT only) that logs every target it
 * tunnels to; like startConnectProxy, it alone resolves `hosts` (to 127.0.0.1).
 */
export async function startSocks5Proxy(hosts: readonly string[] = OUTSIDE_HOSTS): Promise<{ url: string; targets: string[]; close(): Promise<void> }> {
  const targets: string[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    sockets.add(client)
    client.on('error', () => {})
    client.once('data', (hello) => {
      if (hello[0] !== 5) return client.destroy()
      client.write(Buffer.from([5, 0])) // no authentication
      client.once('data', (req) => {
        // What the client sends before the tunnel is up (its TLS hello) waits for it.
        client.pause()
        // VER CMD RSV ATYP DST.ADDR DST.PORT
        if (req[0] !== 5 || req[1] !== 1) return client.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]))
        let host: string
        let at: number
        if (req[3] === 1) {
          host = [...req.subarray(4, 8)].join('.')
          at = 8
        } else if (req[3] === 3) {
          host = req.subarray(5, 5 + req[4]).toString()
          at = 5 + req[4]
        } else return client.end(Buffer.from([5, 8, 0, 1, 0, 0, 0, 0, 0, 0]))
        const port = req.readUInt16BE(at)
        targets.push(`${host}:${port}`)
        const upstream = net.connect(port, host === 'localhost' || hosts.includes(host) ? '127.0.0.1' : host, () => {
          client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]))
          const rest = req.subarray(at + 2)
          if (rest.length) upstream.write(rest)
          upstream.pipe(client)
          client.pipe(upstream)
        })
        sockets.add(upstream)
        upstream.on('error', () => client.end(Buffer.from([5, 4, 0, 1, 0, 0, 0, 0, 0, 0])))
      })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `socks5://127.0.0.1:${port}`,
    targets,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.close(() => r())
      }),
  }
}

/** A server from the sources with `config` (YAML, as loaded from a file), logging into `lines`. */
export async function startLoggedServer(
  config: Record<string, unknown>,
  /** Files written beside the config file first, by their path from its folder. */
  beside: Record<string, string | Buffer> = {},
): Promise<{ server: BurnrateServer; url: string; dbFile: string; lines: string[]; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-net-'))
  mkdirSync(dir, { recursive: true })
  for (const [rel, data] of Object.entries(beside)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true })
    writeFileSync(join(dir, rel), data)
  }
  const file = join(dir, 'config.yaml')
  writeFileSync(file, stringify({ ...config, server: { host: '127.0.0.1', port: 0, ...(config.server as object) } }))
  const lines: string[] = []
  const log: Logger = { debug() {}, info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) }
  const server = createBurnrate(loadConfig({ config: file, dataDir: dir }, {}), { log })
  const url = await server.listen()
  return { server, url, dbFile: join(dir, DB_FILE), lines, stop: async () => void (await server.close(1000)) }
}
