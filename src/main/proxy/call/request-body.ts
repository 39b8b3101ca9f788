import type { IncomingMessage } from 'node:http'

export const DEFAULT_MAX_REQUEST = 100 * 1024 * 1024

export class BodyTooLarge extends Error {}

/** Reads a request body whole, up to `limit` bytes (BodyTooLarge past it); null when the request has none. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const len = req.headers['content-length']
  if (len === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(null)
  if (len !== undefined && Number(len) > limit) return Promise.reject(new BodyTooLarge())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > limit) {
        req.removeAllListeners('data')
        req.resume()
        reject(new BodyTooLarge())
        return
      }
      chunks.push(c)
    })
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)))
    req.on('error', reject)
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
