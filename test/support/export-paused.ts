import { type IncomingMessage, get } from 'node:http'

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

/** How a stalled export's response ended for its client: every byte of it, or cut off before its end. */
export type StalledOutcome = 'whole' | 'cut'

/**
 * Exports `path` of the server at `base` as a client that stops reading without hanging up (a
 * stalled browser tab, a script paused in a debugger): once the first bytes are in it reads no
 * more, and keeps its connection open. `begun` resolves then (status 200). `readOn` has it read
 * on (the tab wakes up; a client that reads nothing sees nothing of the server's end either)
 * and resolves when the response ends: `whole` when every byte arrived, `cut` when the server
 * ended it before its last.
 */
export function exportStalled(base: string, path: string): { begun: Promise<void>; readOn: () => Promise<StalledOutcome> } {
  let res: IncomingMessage | null = null
  let ended: StalledOutcome | null = null
  let onEnd: ((o: StalledOutcome) => void) | null = null
  const begun = new Promise<void>((resolve, reject) => {
    const req = get(`${base}${path}`, (r) => {
      res = r
      if (r.statusCode !== 200) return reject(new Error(`the export answered ${r.statusCode}`))
      r.once('data', () => {
        r.pause()
        resolve()
      })
      // An aborted response errors; its close says how it ended.
      r.on('error', () => {})
      r.on('close', () => {
        ended = r.complete ? 'whole' : 'cut'
        onEnd?.(ended)
      })
    })
    // Once answered, the response says how it ended.
    req.on('error', (err) => {
      if (res === null) reject(err)
    })
  })
  const readOn = () =>
    new Promise<StalledOutcome>((resolve) => {
      if (ended !== null) return resolve(ended)
      onEnd = resolve
      res?.resume()
    })
  return { begun, readOn }
}
