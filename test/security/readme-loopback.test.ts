import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo, LookupFunction } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Burnrate listens on 127.0.0.1 only (the default). Where the hosts file lists `::1 localhost`
 * (Debian and Ubuntu, macOS), `localhost` is ::1 first for curl, browsers and Node, and another
 * user of the machine may listen on [::1] at Burnrate's port: the README's admin examples, which
 * sent the admin token to `localhost:8787`, handed it to that program.
 */
const ADMIN = 'admin-loopback-token-0123456789'
let s: TestServer
let squatter: http.Server
const seen: (string | undefined)[] = []

beforeAll(async () => {
  s = await startTestServer({ admin: { enabled: true, token: ADMIN } })
  const port = Number(new URL(s.url).port)
  squatter = http.createServer((req, res) => {
    seen.push(req.headers.authorization)
    res.end('{}')
  })
  await new Promise<void>((resolve) => squatter.listen(port, '::1', resolve))
})
afterAll(async () => {
  squatter.close()
  await s.cleanup()
})

/** `localhost` as a hosts file with `::1 localhost` before `127.0.0.1 localhost` resolves it (curl and Node try ::1 first). */
const v6First: LookupFunction = (_host, opts, cb) => {
  const all = [{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }]
  if (opts.all) (cb as (e: null, a: typeof all) => void)(null, all)
  else cb(null, all[0].address, all[0].family)
}

function get(host: string, port: number, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path, headers: { authorization: `Bearer ${token}` }, lookup: v6First, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

describe("the README's admin API examples", () => {
  it('with `localhost`, a program on [::1] at Burnrate\'s port gets the admin token; with 127.0.0.1, Burnrate does', async () => {
    const port = Number(new URL(s.url).port)
    await get('localhost', port, '/api/admin/budgets/rules', ADMIN)
    expect(seen).toEqual([`Bearer ${ADMIN}`])
    expect(await get('127.0.0.1', port, '/api/admin/budgets/rules', ADMIN)).toBe(200)
    expect(seen).toHaveLength(1)
    expect((squatter.address() as AddressInfo).address).toBe('::1')
  })

  it('send tokens to 127.0.0.1, never to localhost', () => {
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8')
    // (Every command of the README that names Burnrate's address carries a token or may.)
    const sending = readme.split('\n').filter((l) => /\blocalhost:8787\b/.test(l))
    expect(sending).toEqual([])
  })
})
