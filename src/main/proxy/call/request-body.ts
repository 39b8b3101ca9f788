import type { IncomingMessage } from 'node:http'

export const DEFAULT_MAX_REQUEST = 100 * 1024 * 1024

export class BodyTooLarge extends Error {}
/** The bodies already held in memory leave no room for this one (BodyMemory). */
export class BodyMemoryFull extends Error {}

/**
 * The total of request bodies held in memory at once, across every call: each body is read whole
 * before it goes upstream, so without a total, twenty 99 MB uploads take 2 GB. A body takes its
 * share as it arrives (all of it up front when Content-Length says) and gives it back when its
 * call ends.
 */
export class BodyMemory {
  private used = 0
  constructor(readonly limit: number) {}

  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false
    this.used += bytes
    return true
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes)
  }

  get held(): number {
    return this.used
  }
}

/**
 * Reads a request body whole, up to `limit` bytes (BodyTooLarge past it); null when the request
 * has none. With `memory`, the body's bytes are taken from it (BodyMemoryFull when there is no
 * room; what was taken is given back); the caller gives a returned body's length back when done.
 */
export function readBody(req: IncomingMessage, limit: number, memory?: BodyMemory): Promise<Buffer | null> {
  const len = req.headers['content-length']
  if (len === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(null)
  if (len !== undefined && Number(len) > limit) return Promise.reject(new BodyTooLarge())
  let taken = 0
  if (memory && len !== undefined) {
    const n = Number(len) || 0
    if (!memory.take(n)) return Promise.reject(new BodyMemoryFull())
    taken = n
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const fail = (err: Error) => {
      memory?.give(taken)
      taken = 0
      reject(err)
    }
    req.on('data', (c: Buffer) => {
      size += c.length
      if (memory && size > taken) {
        if (!memory.take(size - taken)) {
          req.removeAllListeners('data')
          req.resume()
          fail(new BodyMemoryFull())
          return
        }
        taken = size
      }
      if (size > limit) {
        req.removeAllListeners('data')
        req.resume()
        fail(new BodyTooLarge())
        return
      }
      chunks.push(c)
    })
    req.on('end', () => {
      if (memory && taken > size) memory.give(taken - size)
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
    })
    req.on('error', fail)
  })
}

export function isJson(contentType: string | undefined): boolean {
  return !!contentType && /[/+]json\b/i.test(contentType)
}

/** The body as JSON when it says it is; undefined otherwise (passed through as sent: the provider answers it). */
export function parseJsonBody(body: Buffer | null, contentType: string | undefined): any {
  if (!body || body.length === 0 || !isJson(contentType)) return undefined
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
}
