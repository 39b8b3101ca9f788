import { get } from 'node:http'

/**
 * Exports `path` of the server at `base` as a slow client would: once the first bytes are in (the
 * export has begun), it stops reading, runs `meanwhile` (commits, updates), then reads the rest.
 * Resolves to the whole body.
 */
export function exportPausedAfterFirstBytes(base: string, path: string, meanwhile: () => Promise<void>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    let paused = false
    get(`${base}${path}`, (res) => {
      res.on('data', (c: Buffer) => {
        chunks.push(c)
        if (paused) return
        paused = true
        // The export has begun and waits for this client to read on.
        res.pause()
        meanwhile().then(() => res.resume(), reject)
      })
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
      res.on('error', reject)
    }).on('error', reject)
  })
}
