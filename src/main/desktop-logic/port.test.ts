import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { startTestServer } from '../../../test/support/server'
import { otherUsersListener } from './listener-owner'
import { PortTakenError, canListen, connectUrl, findFreePort, patientProbe, probePort, reachableUrl, startOrAttach } from './port'

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function listenOn(server: net.Server, port = 0): Promise<number> {
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  closers.push(() => new Promise((r) => server.close(r)))
  return (server.address() as AddressInfo).port
}

function foreignHttp(): http.Server {
  return http.createServer((_req, res) => {
    res.setHeader('server', 'nginx')
    res.setHeader('content-type', 'text/html')
    res.end('<h1>hello</h1>')
  })
}

async function freePort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const { port } = s.address() as AddressInfo
  await new Promise((r) => s.close(r))
  return port
}

describe('connectUrl', () => {
  it('reaches wildcard listens on loopback and brackets IPv6', () => {
    expect(connectUrl('127.0.0.1', 8787)).toBe('http://127.0.0.1:8787')
    expect(connectUrl('0.0.0.0', 8787)).toBe('http://127.0.0.1:8787')
    expect(connectUrl('::', 8787)).toBe('http://[::1]:8787')
    expect(connectUrl('::1', 1)).toBe('http://[::1]:1')
    expect(connectUrl('localhost', 2)).toBe('http://localhost:2')
  })
})

describe('reachableUrl', () => {
  it('turns wildcard listen URLs into loopback ones', () => {
    expect(reachableUrl('http://0.0.0.0:8787')).toBe('http://127.0.0.1:8787')
    expect(reachableUrl('http://[::]:8787')).toBe('http://[::1]:8787')
    expect(reachableUrl('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787')
    expect(reachableUrl('http://192.168.1.5:8787')).toBe('http://192.168.1.5:8787')
  })
})

describe('probePort', () => {
  it('recognises a running Burnrate by its health check', async () => {
    const t = await startTestServer()
    closers.push(() => t.cleanup())
    const port = Number(new URL(t.url).port)
    expect(await probePort('127.0.0.1', port)).toEqual({ kind: 'burnrate', url: t.url, version: expect.any(String) })
  })

  it("says other for another program whose /api/health answers a status and a version, as many services' do: never attached to", async () => {
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(req.url === '/api/health' ? JSON.stringify({ status: 'ok', version: '2.4.1', db: 'up' }) : '{}')
    })
    const port = await listenOn(server)
    const owner = await probePort('127.0.0.1', port)
    expect(owner.kind).toBe('other')
  })

  it('says free when nothing listens', async () => {
    expect(await probePort('127.0.0.1', await freePort())).toEqual({ kind: 'free' })
  })

  it('says other for another web server, naming it', async () => {
    const port = await listenOn(foreignHttp())
    const owner = await probePort('127.0.0.1', port)
    expect(owner.kind).toBe('other')
    expect(owner.kind === 'other' && owner.detail).toContain('nginx')
  })

  // Another user's process needs root to start (CI runs as root); Debian's node is readable by all.
  const asNobody = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/usr/bin/node')
  it.runIf(asNobody)("says other for another user's program that answers as Burnrate: never attached to", async () => {
    const impostor = spawn(
      '/usr/bin/node',
      ['-e', `require('http').createServer((q, s) => s.end(JSON.stringify({ status: 'ok', version: '9.9.9', uptime_s: 5 }))).listen(0, '127.0.0.1', function () { console.log(this.address().port) })`],
      { uid: 65534, gid: 65534, cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] },
    )
    closers.push(async () => impostor.kill())
    const port = await new Promise<number>((resolve, reject) => {
      impostor.stdout!.once('data', (d) => resolve(Number(String(d).trim())))
      impostor.once('exit', (code) => reject(new Error(`the impostor exited (${code})`)))
    })
    // It does answer as Burnrate.
    expect(await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()).toEqual({ status: 'ok', version: '9.9.9', uptime_s: 5 })
    expect(await otherUsersListener('127.0.0.1', port)).toBe(65534)
    // Not where it does not listen: this user's server on ::1 at the same port is still its own.
    expect(await otherUsersListener('::1', port)).toBeNull()
    expect(await probePort('127.0.0.1', port)).toEqual({ kind: 'other', detail: "another user's program (uid 65534) answers on it as Burnrate" })
    const asked: string[] = []
    const r = await startOrAttach({
      host: '127.0.0.1',
      port,
      listen: async (p) => `http://127.0.0.1:${p}`,
      askOtherPort: async (_taken, _suggested, detail) => (asked.push(detail), true),
    })
    expect(asked).toEqual(["another user's program (uid 65534) answers on it as Burnrate"])
    expect(r.kind).toBe('started')
  })

  it('says other for a program that accepts and never answers', async () => {
    const sockets: net.Socket[] = []
    const s = net.createServer((sock) => sockets.push(sock))
    const port = await listenOn(s)
    closers.push(async () => sockets.forEach((x) => x.destroy()))
    const owner = await probePort('127.0.0.1', port, 200)
    expect(owner).toEqual({ kind: 'other', detail: 'it does not answer HTTP within 200 ms', slow: true })
  })
})

describe('patientProbe', () => {
  it('asks a holder that did not answer in time once more, and attaches to a Burnrate answering late', async () => {
    // A Burnrate too busy to answer the first health check in time (it is answered only once its
    // connection was given up), then answering: the app attaches, never offering another port.
    const t = await startTestServer()
    closers.push(() => t.cleanup())
    const health = (await fetch(`${t.url}/api/health`)).json()
    let asked = 0
    const busy = http.createServer((req, res) => {
      if (asked++ === 0) return // the first check gets no answer (its client gives up)
      void health.then((body) => {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(body))
      })
    })
    const port = await listenOn(busy)
    closers.push(async () => busy.closeAllConnections())
    const r = await startOrAttach({
      host: '127.0.0.1',
      port,
      listen: async () => {
        throw new PortTakenError('taken')
      },
      askOtherPort: async (_t, _s, detail) => {
        throw new Error(`must not ask: ${detail}`)
      },
    })
    expect(r).toMatchObject({ kind: 'attached', url: `http://127.0.0.1:${port}` })
    expect(asked).toBe(2)
  })

  it('says other, slow, for a program that never answers either check', async () => {
    const sockets: net.Socket[] = []
    const s = net.createServer((sock) => sockets.push(sock))
    const port = await listenOn(s)
    closers.push(async () => sockets.forEach((x) => x.destroy()))
    // The second, longer, check is the one the answer names (the first waited 100 ms).
    expect(await patientProbe('127.0.0.1', port, 100, 200)).toEqual({ kind: 'other', detail: 'it does not answer HTTP within 200 ms', slow: true })
  })
})

describe('findFreePort', () => {
  it('skips a taken port', async () => {
    const port = await listenOn(foreignHttp())
    expect(await canListen('127.0.0.1', port)).toBe(false)
    const found = await findFreePort('127.0.0.1', port)
    expect(found).toBeGreaterThan(port)
    expect(await canListen('127.0.0.1', found)).toBe(true)
  })
})

describe('startOrAttach', () => {
  it('starts its own server when the port is free', async () => {
    const port = await freePort()
    const listened: number[] = []
    const r = await startOrAttach({
      host: '127.0.0.1',
      port,
      listen: async (p) => {
        listened.push(p)
        return `http://127.0.0.1:${p}`
      },
      askOtherPort: async () => {
        throw new Error('must not ask')
      },
    })
    expect(r).toEqual({ kind: 'started', url: `http://127.0.0.1:${port}` })
    expect(listened).toEqual([port])
  })

  it('attaches to a headless Burnrate on the port instead of failing', async () => {
    const t = await startTestServer()
    closers.push(() => t.cleanup())
    const r = await startOrAttach({
      host: '127.0.0.1',
      port: Number(new URL(t.url).port),
      listen: async () => {
        throw new Error('must not listen')
      },
      askOtherPort: async () => false,
    })
    expect(r).toMatchObject({ kind: 'attached', url: t.url })
  })

  it('offers the next free port when another program holds it, and uses it when accepted', async () => {
    const port = await listenOn(foreignHttp())
    const asked: [number, number, string][] = []
    const r = await startOrAttach({
      host: '127.0.0.1',
      port,
      listen: async (p) => `http://127.0.0.1:${p}`,
      askOtherPort: async (taken, suggested, detail) => {
        asked.push([taken, suggested, detail])
        return true
      },
    })
    expect(asked).toHaveLength(1)
    expect(asked[0][0]).toBe(port)
    expect(asked[0][1]).toBeGreaterThan(port)
    expect(asked[0][2]).toContain('nginx')
    expect(r).toEqual({ kind: 'started', url: `http://127.0.0.1:${asked[0][1]}` })
  })

  it('gives up, saying why, when the offer is declined', async () => {
    const port = await listenOn(foreignHttp())
    const r = await startOrAttach({ host: '127.0.0.1', port, listen: async () => 'x', askOtherPort: async () => false })
    expect(r.kind).toBe('cancelled')
    expect(r.kind === 'cancelled' && r.reason).toContain(`port ${port} is in use by another program`)
  })

  it('looks again when the port is taken between probe and listen', async () => {
    const t = await startTestServer()
    closers.push(() => t.cleanup())
    const port = Number(new URL(t.url).port)
    let probes = 0
    const r = await startOrAttach({
      host: '127.0.0.1',
      port,
      probe: async (h, p) => (probes++ === 0 ? { kind: 'free' } : probePort(h, p)),
      listen: async () => {
        throw new PortTakenError('taken')
      },
      askOtherPort: async () => false,
    })
    expect(r).toMatchObject({ kind: 'attached', url: t.url })
  })

  it('does not probe port 0 (the system picks)', async () => {
    const r = await startOrAttach({
      host: '127.0.0.1',
      port: 0,
      probe: async () => {
        throw new Error('must not probe')
      },
      listen: async () => 'http://127.0.0.1:5555',
      askOtherPort: async () => false,
    })
    expect(r).toEqual({ kind: 'started', url: 'http://127.0.0.1:5555' })
  })
})
