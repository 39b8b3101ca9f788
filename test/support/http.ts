import http from 'node:http'

export interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
  text: string
  json(): any
}

/** One HTTP request on a fresh connection, with the whole response read. */
export function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer; localAddress?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false, localAddress: opts.localAddress }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c) => parts.push(c))
      res.on('end', () => {
        const body = Buffer.concat(parts)
        const text = body.toString('utf8')
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, json: () => JSON.parse(text) })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(opts.body)
  })
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
}

/**
 * Polls until `fn` returns a truthy value (the ledger writes within its flush interval). It
 * returns as soon as the condition holds; the limit only bounds a failure, so it is generous
 * enough for a busy 2-core machine.
 */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > end) throw last instanceof Error ? last : new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The connections a server holds open now (to wait until it has seen a client go). */
export function openConnections(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
}
