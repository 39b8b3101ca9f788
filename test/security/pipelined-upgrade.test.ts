import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listeningUrl } from '../support/child'
import { request } from '../support/http'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * A WebSocket upgrade pipelined behind a plain request on one connection (any local program can
 * send one; no browser does): Node hands the upgrade over while the request's answer still holds
 * the socket. The built headless server is run as a process of its own, as users run it, so that
 * an exception thrown out of Node's parser ends it as it would theirs.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const KEY = 'dGhlIHNhbXBsZSBub25jZQ=='

let dir: string
let up: WsUpstream
let child: ChildProcess
let url: string
let output: () => string
const upgraded: string[] = []

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-pipelined-'))
  up = await startWsUpstream({ onConnection: (_ws, req) => upgraded.push(String(req.url)) })
  const cfg = join(dir, 'config.yaml')
  writeFileSync(cfg, `server: {host: 127.0.0.1, port: 0}\npricing: {auto_update: false}\nproviders: {openai: {base_url: "${up.url}/v1"}}\n`)
  child = spawn(process.execPath, [CLI, '--config', cfg, '--data-dir', join(dir, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] })
  const l = listeningUrl(child)
  output = l.output
  url = await l.url
})
afterAll(async () => {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await up.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Writes `text` on one connection and reads what comes back until `enough` says so, or the connection closes. */
function raw(text: string, enough: (got: string) => boolean): Promise<string> {
  const { port } = new URL(url)
  return new Promise((done) => {
    const s = connect(Number(port), '127.0.0.1')
    let got = ''
    s.on('data', (d) => {
      got += String(d)
      if (enough(got)) {
        s.destroy()
        done(got)
      }
    })
    s.on('close', () => done(got))
    s.on('error', () => done(got))
    s.write(text)
  })
}

describe('an upgrade pipelined behind a request on the same connection', () => {
  it('is taken up once the answer before it is sent, and the server goes on', async () => {
    const host = `Host: ${new URL(url).host}\r\n`
    const ws = `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${KEY}\r\n`
    // A proxied socket (Codex's Responses socket) behind a health check.
    const got = await raw(`GET /api/health HTTP/1.1\r\n${host}\r\nGET /v1/responses HTTP/1.1\r\n${host}${ws}\r\n`, (g) => g.includes('HTTP/1.1 101'))
    // The health answer whole, then the upgrade's (before: the process ended with ERR_HTTP_SOCKET_ASSIGNED).
    expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*"status":"ok"[\s\S]*HTTP\/1\.1 101 Switching Protocols\r\n/)
    expect(upgraded).toEqual(['/v1/responses'])
    // An upgrade of a path that is not proxied is answered as the plain request it also is, after the one before it.
    const plain = await raw(`GET /api/health HTTP/1.1\r\n${host}\r\nGET /api/health HTTP/1.1\r\n${host}${ws}\r\n`, () => false)
    expect(plain.match(/HTTP\/1\.1 200 OK\r\n/g)).toHaveLength(2)
    // Still serving.
    expect((await request(`${url}/api/health`)).status).toBe(200)
    expect(child.exitCode, output()).toBeNull()
    expect(output()).not.toContain('ERR_HTTP_SOCKET_ASSIGNED')
  })
})
