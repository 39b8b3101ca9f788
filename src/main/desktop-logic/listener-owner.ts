import { readFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'

/**
 * Whose program listens on an address (Linux): the kernel's socket tables (/proc/net/tcp and
 * tcp6) list every socket with its owner's user id. Another user's program answering on
 * Burnrate's port as Burnrate must not be attached to (./port.ts).
 */

/** An address as the tables write it: each 32-bit word in the machine's byte order, in hex (127.0.0.1 is 0100007F). */
export function tableHex(bytes: Buffer): string {
  let hex = ''
  for (let i = 0; i < bytes.length; i += 4) hex += Buffer.from(bytes.subarray(i, i + 4)).reverse().toString('hex')
  return hex.toUpperCase()
}

/** An IP address's bytes (4 for IPv4, 16 for IPv6, `::` and an embedded IPv4 expanded). */
export function ipBytes(ip: string): Buffer {
  if (net.isIPv4(ip)) return Buffer.from(ip.split('.').map(Number))
  let text = ip
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number)
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t]
  const out = Buffer.alloc(16)
  groups.forEach((g, i) => out.writeUInt16BE(Number.parseInt(g, 16), i * 2))
  return out
}

/**
 * The addresses, as the tables write them, whose listening sockets a connection to `host` may
 * reach, most specific first: the address itself, then the wildcard of its family, and for IPv4
 * an IPv6 wildcard socket (which takes IPv4 connections too) or its IPv4-mapped form. Null for
 * a name: any listener on the port counts.
 */
function reachable(host: string): { tcp: string[]; tcp6: string[] }[] | null {
  if (net.isIPv4(host)) {
    const mapped = tableHex(Buffer.concat([Buffer.alloc(10), Buffer.from([0xff, 0xff]), ipBytes(host)]))
    return [{ tcp: [tableHex(ipBytes(host))], tcp6: [mapped] }, { tcp: ['00000000'], tcp6: ['0'.repeat(32)] }]
  }
  if (net.isIPv6(host)) return [{ tcp: [], tcp6: [tableHex(ipBytes(host))] }, { tcp: [], tcp6: ['0'.repeat(32)] }]
  return null
}

/**
 * The user ids of the sockets listening on TCP `port` that a connection to `host` reaches (the
 * most specific address that has one), from the tables in `procNet`; null where neither table
 * can be read (another system).
 */
export async function listenerUids(host: string, port: number, procNet = '/proc/net'): Promise<number[] | null> {
  const listening: { file: 'tcp' | 'tcp6'; addr: string; uid: number }[] = []
  let read = false
  for (const file of ['tcp', 'tcp6'] as const) {
    let text: string
    try {
      text = await readFile(join(procNet, file), 'utf8')
    } catch {
      continue
    }
    read = true
    // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...": st 0A is LISTEN.
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 8 || f[3] !== '0A') continue
      const colon = f[1].lastIndexOf(':')
      if (Number.parseInt(f[1].slice(colon + 1), 16) === port) listening.push({ file, addr: f[1].slice(0, colon).toUpperCase(), uid: Number(f[7]) })
    }
  }
  if (!read) return null
  const tiers = reachable(host)
  if (!tiers) return listening.map((l) => l.uid)
  for (const tier of tiers) {
    const found = listening.filter((l) => tier[l.file].includes(l.addr))
    if (found.length) return found.map((l) => l.uid)
  }
  return []
}

/** Another user's id among the programs listening where a connection to host:port goes (Linux), or null: none, or not known here. */
export async function otherUsersListener(host: string, port: number, procNet?: string): Promise<number | null> {
  const me = process.getuid?.()
  if (me === undefined) return null
  const uids = await listenerUids(host, port, procNet)
  return uids?.find((u) => u !== me) ?? null
}

/**
 * For an attached server's address: whether the program listening there now may be asked (this
 * user's). The app identifies the Burnrate it attaches to once, at start; when that server stops,
 * anyone may take its port and answer as Burnrate, and the tray's polls (the dashboard token in
 * each) would go to that program and show its numbers as the spend. Asked before each request.
 * True where the tables cannot be read. With no listener at all, false once this user's has been
 * seen there (it stopped: nothing to ask, and a program binding the port between this check and
 * the request would get it); true while none ever was (a port forwarded by the firewall, as
 * Docker's without its userland proxy, has no listener in this machine's tables).
 */
export function ownListener(url: string, procNet?: string): () => Promise<boolean> {
  const u = new URL(url)
  const host = u.hostname.replace(/^\[|\]$/g, '')
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80))
  let seenOwn = false
  return async () => {
    const me = process.getuid?.()
    if (me === undefined) return true
    let uids: number[] | null
    try {
      uids = await listenerUids(host, port, procNet)
    } catch {
      return true
    }
    if (uids === null) return true
    if (uids.length === 0) return !seenOwn
    if (!uids.every((uid) => uid === me)) return false
    seenOwn = true
    return true
  }
}
