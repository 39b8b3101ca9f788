import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** A webhook receiver on loopback: records every POST; `failFirst` answers 500 to that many first. */
export async function receiver(failFirst = 0) {
  const got: { path: string; body: any }[] = []
  let failures = failFirst
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (failures > 0) {
      failures--
      res.writeHead(500).end('try later')
      return
    }
    got.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(parts).toString('utf8')) })
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, got, close: () => new Promise<void>((r) => server.close(() => r())) }
}

export type Receiver = Awaited<ReturnType<typeof receiver>>

/** A webhook receiver on loopback that reads each POST and never answers; `posts` counts them. */
export async function hangingReceiver() {
  let posts = 0
  const server = http.createServer((req) => {
    req.resume()
    req.on('end', () => posts++)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    posts: () => posts,
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    }),
  }
}

/**
 * A webhook receiver on loopback that asks to slow down, as Slack does: it answers the first
 * `refusals` POSTs `status` (429) with a Retry-After of `seconds`, as delta-seconds or as an HTTP
 * date (`form`), and any POST that comes before that time with the same status too (counted in
 * `early`; `refuseEarly: false` takes them); later ones it takes (`got`).
 */
export async function slowDownReceiver(o: { seconds: number; form?: 'seconds' | 'date'; status?: number; refusals?: number; refuseEarly?: boolean }) {
  const got: { path: string; body: any }[] = []
  const status = o.status ?? 429
  let refusals = o.refusals ?? 1
  let early = 0
  let posts = 0
  let until = 0
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    posts++
    const now = Date.now()
    if (now < until && o.refuseEarly !== false) {
      early++
      res.writeHead(status, { 'retry-after': String(Math.ceil((until - now) / 1000)) }).end('rate_limited')
      return
    }
    if (refusals > 0) {
      refusals--
      let header: string
      if (o.form === 'date') {
        // An HTTP date has whole seconds: the time asked for is the one the header says.
        until = Math.floor((now + o.seconds * 1000) / 1000) * 1000
        header = new Date(until).toUTCString()
      } else {
        until = now + o.seconds * 1000
        header = String(o.seconds)
      }
      res.writeHead(status, { 'retry-after': header }).end('rate_limited')
      return
    }
    got.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(parts).toString('utf8')) })
    res.writeHead(200).end('ok')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    got,
    posts: () => posts,
    early: () => early,
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    }),
  }
}
