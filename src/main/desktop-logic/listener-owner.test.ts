import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ipBytes, listenerUids, otherUsersListener, ownListener, tableHex } from './listener-owner'

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function listenOn(server: http.Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((r) => server.listen(0, host, r))
  closers.push(() => new Promise((r) => server.close(r)))
  return (server.address() as AddressInfo).port
}

describe('whose program listens on an address', () => {
  it("writes addresses as the kernel's socket tables do (each 32-bit word in the machine's order)", () => {
    expect(tableHex(ipBytes('127.0.0.1'))).toBe('0100007F')
    expect(tableHex(ipBytes('::1'))).toBe('00000000000000000000000001000000')
    expect(tableHex(ipBytes('::'))).toBe('0'.repeat(32))
    expect(tableHex(ipBytes('::ffff:127.0.0.1'))).toBe('0000000000000000FFFF00000100007F')
    expect(tableHex(ipBytes('2001:db8::8a2e:370:7334'))).toBe('B80D0120000000002E8A000034737003')
  })

  it("reads who listens on a port from the kernel's socket tables (Linux): this process for its own server", async () => {
    const port = await listenOn(http.createServer())
    if (process.platform !== 'linux') return expect(await listenerUids('127.0.0.1', port)).toBeNull()
    expect(await listenerUids('127.0.0.1', port)).toEqual([process.getuid!()])
    expect(await otherUsersListener('127.0.0.1', port)).toBeNull()
    // Another address (nothing of this port there, nor a wildcard), and a name: any listener on the port.
    expect(await listenerUids('127.0.0.2', port)).toEqual([])
    expect(await listenerUids('::1', port)).toEqual([])
    expect(await listenerUids('localhost', port)).toEqual([process.getuid!()])
    // A wildcard listen (IPv6's takes IPv4 connections too) and an IPv6 one.
    const p6 = await listenOn(http.createServer(), '::')
    expect(await listenerUids('127.0.0.1', p6)).toEqual([process.getuid!()])
    expect(await listenerUids('::1', p6)).toEqual([process.getuid!()])
  })

  it.runIf(process.platform === 'linux')('lets an attached server be asked while this user listens there, not once nobody does', async () => {
    const server = http.createServer()
    const port = await listenOn(server)
    const allowed = ownListener(`http://127.0.0.1:${port}`)
    expect(await allowed()).toBe(true)
    await new Promise((r) => server.close(r))
    // Down: nothing to ask, and whatever binds the port before the request is sent is not known to be it.
    expect(await allowed()).toBe(false)
    // An address no listener in the tables ever served (a port the firewall forwards, as Docker's
    // without its userland proxy) is asked, as before.
    const none = ownListener(`http://127.0.0.1:${port}`)
    expect(await none()).toBe(true)
  })
})
