import type { Egress } from '../http/egress'
import { request } from '../http/request'
import { basicAuthRequest } from '../http/basic-auth'

/** Largest price document accepted (the published one is about 1 MB). */
const MAX_BYTES = 32 * 1024 * 1024

/**
 * The body as text, counted while it arrives: past `max` bytes the download is cut off (a body
 * without a Content-Length, or lying about it, is never buffered whole).
 */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, max: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > max) {
      const err = new Error(`the data is larger than ${max} bytes`)
      body.destroy(err)
      throw err
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

export interface DownloadOptions {
  url: string
  /** How to reach `url` (behind a proxy); unset: directly. */
  egress?: Egress
  /** Longest wait for the headers, and between two chunks of the body. */
  timeoutMs: number
  /** Ends the download: the whole download's deadline, and the updater's close. */
  signal: AbortSignal
  /** When this check began (`checkedIso` as text): the data's date is never later. */
  checked: Date
  checkedIso: string
  /** When the data in use was published (0: any download is newer), and that date as the status shows it; read when asked and again when answered. */
  inUse(): { since: number; at: string | null }
}

/** What the server answered: nothing newer (304), or the data's text and when it was published. */
export type Downloaded = { notModified: true } | { notModified: false; text: string; published: string }

/**
 * Fetches the published price data, asking only for data newer than the data in use, and reads
 * it whole (at most MAX_BYTES). Throws for any other answer, and for a copy older than the data in use.
 */
export async function downloadPrices(o: DownloadOptions): Promise<Downloaded> {
  // A user name and password in the URL go as basic auth (never logged: see shownUrl).
  const mirror = basicAuthRequest(o.url)
  // Asks the server for the data only when it is newer than the data in use.
  const t = o.inUse().since
  const since: Record<string, string> = t > 0 ? { 'if-modified-since': new Date(t).toUTCString() } : {}
  const res = await request(mirror.url, {
    method: 'GET',
    headers: { accept: 'application/json', 'user-agent': 'burnrate-price-update', ...mirror.headers, ...since },
    dispatcher: o.egress?.for(mirror.url),
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    signal: o.signal,
  })
  if (res.statusCode === 304) {
    // Nothing newer than the data in use: nothing downloaded.
    await res.body.dump()
    return { notModified: true }
  }
  if (res.statusCode !== 200) {
    await res.body.dump()
    throw new Error(`HTTP ${res.statusCode}`)
  }
  const lm = res.headers['last-modified']
  const stated = typeof lm === 'string' ? Date.parse(lm) : NaN
  // A date past this check (a mirror's clock ahead) is the check's: kept as the data's date, it
  // would make all data published before it, the real updates of the years to come, look older.
  const published = Number.isFinite(stated) && stated <= o.checked.getTime() ? new Date(stated).toISOString() : o.checkedIso
  const inUse = o.inUse()
  if (inUse.since > Date.parse(published)) {
    // A stale copy (a CDN or mirror serving last year's file) never replaces newer data.
    await res.body.dump()
    throw new Error(`the server's data (of ${published}) is older than the data in use (of ${inUse.at})`)
  }
  const declared = Number(res.headers['content-length'])
  if (declared > MAX_BYTES) {
    await res.body.dump()
    throw new Error(`the data is larger than ${MAX_BYTES} bytes`)
  }
  return { notModified: false, text: await readCapped(res.body, MAX_BYTES), published }
}
