import { createHash } from 'node:crypto'
import { chmod, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Provider } from '@pydantic/genai-prices'
import type { PriceData } from '../../shared/api'
import type { Egress } from '../http/egress'
import { request } from '../http/request'
import { untrustedReason } from '../security/owned-file'
import { loadOnce } from '../server/load-once'
import { MAX_PRICE_MOVE, unchargedReason } from './check-charges'
import { refuseReason } from './check-data'
import { loadPriceLibrary, PRICE_DATA_URL, whenPriceLibraryLoaded } from './library'
import { mirrorRequest, shownUrl } from './mirror-url'

/**
 * What the dashboard shows about the price data (GET /api/dashboard/prices): `updated_at` is
 * when the data in use was published (the server's Last-Modified) or else fetched, null for the
 * bundled data; `checked_at` and `last_error` tell about the last fetch.
 */
export type PriceDataStatus = PriceData

export interface PriceUpdaterOptions {
  /** The data folder: the fetched data is kept there as `prices.json`. */
  dataDir: string
  url?: string
  autoUpdate: boolean
  /** Called after new data is in use (the pricer forgets its old lookups). */
  onChange: () => void
  /** First check this long after start (default 10 s: never during start-up). */
  firstDelayMs?: number
  /** Data younger than this is not fetched again (default 24 h); also the interval between checks. */
  maxAgeMs?: number
  /** Longest time one fetch may take (default 60 s). */
  timeoutMs?: number
  log?: { info(m: string): void; warn(m: string): void }
  /** How to reach `url` (behind a proxy: upstream.proxy, HTTPS_PROXY); unset: directly. */
  egress?: Egress
}

export const PRICES_FILE = 'prices.json'
const DAY = 86_400_000
/** Largest price document accepted (the published one is about 1 MB). */
const MAX_BYTES = 32 * 1024 * 1024
/** Waits before checking again after 1, 2, 3, 4+ failed checks in a row (capped at the daily interval). */
const RETRY_MS = [60_000, 300_000, 900_000, 3_600_000]

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

/** The cache file: the data and when it was published. */
interface Cached {
  updated_at: string
  fetched_at: string
  /** `bundledPrint()` of the bundled data it was accepted over (absent in copies written before it was kept). */
  bundled?: string
  /** Checked model by model when downloaded (`unchargedReason`); copies kept before that check existed lack it and are checked so when loaded. */
  charges_checked?: boolean
  providers: Provider[]
}

let bundledPrintMemo: string | null = null

/**
 * A fingerprint of the bundled price data (its providers' and models' ids), taken once, before
 * any newer data replaces it. A cached copy written over the same bundled data was accepted as
 * newer than it, so it may lack models the bundled data still prices (retired upstream); a copy
 * written under another release's bundled data may be older than this one's.
 */
function bundledPrint(data: Provider[]): string {
  if (bundledPrintMemo === null) {
    const h = createHash('sha256')
    for (const p of data) {
      h.update(p.id).update('\n')
      for (const m of p.models) h.update(m.id).update(' ')
    }
    bundledPrintMemo = h.digest('hex').slice(0, 32)
  }
  return bundledPrintMemo
}

/**
 * Keeps @pydantic/genai-prices' data current with the library's own mechanism (`updatePrices`
 * hands us `setProviderData`, which validates the data and replaces what `calcPrice` uses).
 * Nothing here runs on a call's path or delays start-up: the cached copy is read
 * asynchronously, the first fetch waits `firstDelayMs`, and until something newer is validated
 * the bundled data (or the cache) keeps pricing. Offline, a failed fetch only records its error.
 */
export class PriceUpdater {
  readonly url: string
  private readonly maxAgeMs: number
  private timer: NodeJS.Timeout | null = null
  private closed = false
  /** Cuts a download under way at close: a stop closes the dispatcher it came through, which waits for it (a host sending a byte at a time never ends). */
  private readonly cut = new AbortController()
  private running: Promise<boolean> | null = null
  private set: ((data: Provider[]) => void) | null = null
  /** Failed checks in a row: the next check comes sooner, and only the first failure is logged. */
  private failures = 0
  private readonly state: PriceDataStatus
  private bundled = ''

  /** `url` as the price status and the log name it (see shownUrl). */
  private readonly shown: string

  constructor(private readonly opts: PriceUpdaterOptions) {
    this.url = opts.url ?? PRICE_DATA_URL
    this.shown = shownUrl(this.url)
    this.maxAgeMs = opts.maxAgeMs ?? DAY
    this.state = { source: 'bundled', updated_at: null, checked_at: null, last_error: null, auto_update: opts.autoUpdate, url: this.shown }
  }

  /** The library loaded (./library.ts) and its update hook taken, once. */
  private readonly ready = loadOnce(() =>
    loadPriceLibrary().then(async (lib) => {
      // Taken before any newer data is set (only an updater sets it, after this).
      this.bundled = bundledPrint((await lib.waitForUpdate()) ?? [])
      lib.updatePrices(({ setProviderData }) => {
        // Synchronous: the library validates and swaps the data, or throws and keeps what it had.
        this.set = (data) => setProviderData(data)
      })
    }),
  )

  get file(): string {
    return join(this.opts.dataDir, PRICES_FILE)
  }

  status(): PriceDataStatus {
    return { ...this.state }
  }

  /**
   * What pricing waits for (the server's Pricer, `prepareWith`): the library loaded and its
   * update hook taken, then the cached newer data applied if there is any, so that no call is
   * priced with older data than the data folder holds. Once; then, with auto_update, checks for
   * newer data after the first delay and daily. A failure (the library could not load) is tried
   * again by the next caller.
   */
  readonly prepare: () => Promise<void> = loadOnce(() =>
    this.ready().then(() =>
      this.loadCache().then((fresh) => {
        if (this.closed || !this.opts.autoUpdate) return
        this.schedule(fresh ? this.maxAgeMs : (this.opts.firstDelayMs ?? 10_000))
      }),
    ),
  )

  /** Prepares once something has loaded the price library (start-up does not load it: ./library.ts). */
  start(): void {
    void whenPriceLibraryLoaded().then(() => this.prepare().catch(() => {}))
  }

  private schedule(ms: number): void {
    if (this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      // A failure (the host briefly down) is retried soon, a success a day later.
      void this.update().finally(() =>
        this.schedule(this.failures ? Math.min(RETRY_MS[Math.min(this.failures, RETRY_MS.length) - 1]!, this.maxAgeMs) : this.maxAgeMs),
      )
    }, ms)
    this.timer.unref()
  }

  /** Applies the cached data if there is any; true when it is younger than the maximum age. */
  async loadCache(): Promise<boolean> {
    try {
      await this.ready()
    } catch (err) {
      this.state.last_error = `the price library could not be loaded: ${(err as Error).message}`
      return false
    }
    let cached: Cached
    try {
      // Only the user's own copy: in a data folder other users may write, theirs could price every call at a thousandth.
      const untrusted = untrustedReason(this.file)
      if (untrusted) {
        this.opts.log?.warn(`prices: not using ${this.file} (${untrusted}); keeping the bundled data`)
        return false
      }
      cached = JSON.parse(await readFile(this.file, 'utf8')) as Cached
    } catch {
      return false // none yet, or unreadable: the bundled data stays
    }
    // JSON that is no object (`null`, written by hand or another tool) is no kept copy: reading its fields would throw, and no call could be priced.
    if (typeof cached !== 'object' || cached === null || Array.isArray(cached)) return false
    if (this.closed) return false
    // A copy kept from before an upgrade can be older than the bundled data (gpt-5 unknown to
    // it): it is used only when it prices every model the bundled data (still in use) prices. A
    // copy accepted over this same bundled data is newer than it, though it may have retired a
    // few models (claude-2): it is checked as a download is. The model-by-model check (a few
    // hundred ms, on the first call's way here) was done when the copy was downloaded; a copy
    // kept before that check existed gets it once, and is kept again marked as checked.
    const lib = await loadPriceLibrary()
    const sameBundle = cached.bundled === this.bundled
    const inUse = (await lib.waitForUpdate()) ?? []
    const unchecked = cached.charges_checked !== true
    const older = refuseReason(lib, cached.providers, inUse, !sameBundle) ?? (unchecked ? (await unchargedReason(lib, cached.providers, inUse)).refused : null)
    if (older) {
      this.opts.log?.info(`prices: not using ${this.file} (${older}); keeping the bundled data`)
      return false
    }
    if (this.closed || !this.apply(cached.providers)) return false
    if (unchecked) await this.writeCache({ ...cached, charges_checked: true })
    this.state.source = 'cached'
    this.state.updated_at = cached.updated_at ?? null
    const fetched = Date.parse(cached.fetched_at)
    return Number.isFinite(fetched) && Date.now() - fetched < this.maxAgeMs
  }

  /** Fetches the published data now; true when newer data is in use afterwards. One fetch at a time. */
  update(): Promise<boolean> {
    this.running ??= this.fetchOnce().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async fetchOnce(): Promise<boolean> {
    const checked = new Date()
    this.state.checked_at = checked.toISOString()
    const timeoutMs = this.opts.timeoutMs ?? 60_000
    // The whole download's limit: undici's own timeouts restart with each chunk, so a server
    // trickling bytes would hold this fetch, and with it every later check, for good.
    const deadline = AbortSignal.timeout(timeoutMs)
    let downloaded = false
    try {
      await this.ready()
      // A user name and password in the URL go as basic auth (never logged: see shownUrl).
      const mirror = mirrorRequest(this.url)
      const res = await request(mirror.url, {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'burnrate-price-update', ...mirror.headers, ...this.sinceHeader() },
        dispatcher: this.opts.egress?.for(mirror.url),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.any([deadline, this.cut.signal]),
      })
      if (res.statusCode === 304) {
        // Nothing newer than the data in use: nothing downloaded.
        await res.body.dump()
        this.recovered()
        return false
      }
      if (res.statusCode !== 200) {
        await res.body.dump()
        throw new Error(`HTTP ${res.statusCode}`)
      }
      const lm = res.headers['last-modified']
      const stated = typeof lm === 'string' ? Date.parse(lm) : NaN
      // A date past this check (a mirror's clock ahead) is the check's: kept as the data's date, it
      // would make all data published before it, the real updates of the years to come, look older.
      const published = Number.isFinite(stated) && stated <= checked.getTime() ? new Date(stated).toISOString() : this.state.checked_at
      if (this.inUseSince() > Date.parse(published)) {
        // A stale copy (a CDN or mirror serving last year's file) never replaces newer data.
        await res.body.dump()
        throw new Error(`the server's data (of ${published}) is older than the data in use (of ${this.state.updated_at})`)
      }
      const declared = Number(res.headers['content-length'])
      if (declared > MAX_BYTES) {
        await res.body.dump()
        throw new Error(`the data is larger than ${MAX_BYTES} bytes`)
      }
      const text = await readCapped(res.body, MAX_BYTES)
      downloaded = true
      const data = JSON.parse(text) as unknown
      if (this.closed) return false
      const lib = await loadPriceLibrary()
      const inUse = (await lib.waitForUpdate()) ?? []
      const shape = refuseReason(lib, data, inUse)
      const charges = shape ? null : await unchargedReason(lib, data as Provider[], inUse)
      const refused = shape ?? charges!.refused
      if (refused) throw new Error(`the price data was refused: ${refused}`)
      if (this.closed) return false
      if (!this.apply(data as Provider[], true)) return false
      this.state.source = 'updated'
      this.state.updated_at = published
      this.recovered()
      await this.writeCache({ updated_at: published, fetched_at: this.state.checked_at, bundled: this.bundled, charges_checked: true, providers: data as Provider[] })
      this.opts.log?.info(`prices: updated from ${this.shown} (data of ${published})`)
      for (const m of charges!.madeFree) this.opts.log?.warn(`prices: the new data makes ${m} free: it is charged $0 from now on (a price in pricing.overrides or the admin API wins)`)
      for (const m of charges!.leftUnpriced) this.opts.log?.warn(`prices: the new data has no price for ${m}: its calls are recorded unpriced from now on (a price in pricing.overrides or the admin API prices them)`)
      for (const m of charges!.pricedAs) this.opts.log?.warn(`prices: the new data prices ${m} (an earlier entry's match takes its name; a price in pricing.overrides or the admin API wins)`)
      for (const m of charges!.moved) this.opts.log?.warn(`prices: the new data moves the price of ${m}, ${MAX_PRICE_MOVE} times or more (a price in pricing.overrides or the admin API wins)`)
      return true
    } catch (err) {
      if (this.closed) return false
      this.state.last_error = deadline.aborted && !downloaded ? `the download took longer than ${timeoutMs} ms` : (err as Error).message
      // Logged once while checks keep failing (they are retried within minutes).
      if (this.failures++ === 0) {
        this.opts.log?.warn(`prices: could not update from ${this.shown} (${this.state.last_error}); keeping the ${this.state.source} data`)
      }
      return false
    }
  }

  /** A check succeeded: the error cleared, and logged once if checks had been failing. */
  private recovered(): void {
    if (this.failures > 0) this.opts.log?.info(`prices: ${this.shown} answers again after ${this.failures} failed check(s)`)
    this.failures = 0
    this.state.last_error = null
  }

  /** When the data in use was published; 0 for the bundled data, or a copy kept dated ahead of now by an earlier release (any download is newer). */
  private inUseSince(): number {
    const t = this.state.source === 'bundled' || !this.state.updated_at ? NaN : Date.parse(this.state.updated_at)
    return Number.isFinite(t) && t <= Date.now() ? t : 0
  }

  /** Asks the server for the data only when it is newer than the data in use. */
  private sinceHeader(): Record<string, string> {
    const t = this.inUseSince()
    return t > 0 ? { 'if-modified-since': new Date(t).toUTCString() } : {}
  }

  /** Hands data to the library; false (with the reason recorded) when it refuses it. */
  private apply(data: Provider[], rethrow = false): boolean {
    try {
      if (!this.set) throw new Error('the price library took no update hook')
      this.set(data)
    } catch (err) {
      const msg = `the price data was refused: ${(err as Error).message}`
      if (rethrow) throw new Error(msg, { cause: err })
      this.state.last_error = msg
      return false
    }
    this.opts.onChange()
    return true
  }

  /**
   * Written to a temporary file then renamed, private to the user. The temporary file is made new
   * ('wx'), never opened through what is there: in a data folder other users may write, a link
   * one of them put under its name would have the data written over the file it points to.
   */
  private async writeCache(c: Cached): Promise<void> {
    const tmp = `${this.file}.tmp`
    try {
      await rm(tmp, { force: true })
      await writeFile(tmp, JSON.stringify(c), { mode: 0o600, flag: 'wx' })
      await chmod(tmp, 0o600)
      await rename(tmp, this.file)
    } catch (err) {
      this.opts.log?.warn(`prices: could not keep the price data in ${this.file}: ${(err as Error).message}`)
    }
  }

  /** Whether a cache file exists (tests, status). */
  async cached(): Promise<boolean> {
    return stat(this.file).then(
      () => true,
      () => false,
    )
  }

  close(): void {
    this.closed = true
    this.cut.abort()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
