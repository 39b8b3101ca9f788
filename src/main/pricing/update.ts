import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Provider } from '@pydantic/genai-prices'
import type { PriceData } from '../../shared/api'
import type { Egress } from '../http/egress'
import { loadOnce } from '../server/load-once'
import { MAX_PRICE_MOVE, unchargedReason } from './check-charges'
import { refuseReason } from './check-data'
import { loadPriceLibrary, PRICE_DATA_URL, whenPriceLibraryLoaded } from './library'
import { shownUrl } from './mirror-url'
import { keepKnown, withoutKept } from './keep-known'
import { bundledData, bundledPricesPrint, bundledPrint, type Cached, type CopyStamp, PRICES_FILE, readCache, writeCache } from './update-cache'
import { downloadPrices } from './update-download'

export { PRICES_FILE } from './update-cache'

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

const DAY = 86_400_000
/** Waits before checking again after 1, 2, 3, 4+ failed checks in a row (capped at the daily interval). */
const RETRY_MS = [60_000, 300_000, 900_000, 3_600_000]

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
  /** The bundled data, whose every price newer data keeps (./keep-known.ts). */
  private bundledProviders: Provider[] = []
  /** `provider model` of the entries the data in use keeps from before because its download lacks them. */
  private kept: string[] = []
  /** Those of `kept` only a download priced (./update-cache.ts kept_added). */
  private keptAdded: string[] = []
  /** When the kept copy in use was fetched (`loadCache`), in ms. */
  private keptFetchedAt = 0

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
      this.bundledProviders = bundledData((await lib.waitForUpdate()) ?? [])
      this.bundled = bundledPrint(this.bundledProviders)
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
        const first = this.opts.firstDelayMs ?? 10_000
        // A fresh copy is checked again once it is maxAgeMs old, counted from when it was fetched
        // (one fetched "later" than now, the clock set back since, at most maxAgeMs from now).
        this.schedule(fresh ? Math.max(first, Math.min(this.maxAgeMs, this.maxAgeMs - (Date.now() - this.keptFetchedAt))) : first)
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
    const read = await readCache(this.file, (why) => this.opts.log?.warn(`prices: not using ${this.file} (${why}); keeping the bundled data`))
    if (!read || this.closed) return false
    const cached = read.cached
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
    const listed = Array.isArray(cached.kept) ? cached.kept.filter((k) => typeof k === 'string') : []
    // The entries it kept (./keep-known.ts) are the prices of the bundled data they were kept over.
    // Over other bundled data (another release's, or the same models at other prices) they are not
    // the copy's own: it must price this bundled data's models itself, and this data's prices are
    // kept in their place, or the older release's would stay in use, after each download too.
    const keptHere = listed.length === 0 || (sameBundle && cached.kept_over === bundledPricesPrint(this.bundledProviders))
    // Those a download priced (an earlier one's model a later one lacked) are no bundled data's: they
    // stay, unless this bundled data lists the model (its price then kept in their place, as above).
    const bundledNames = new Set(this.bundledProviders.flatMap((p) => p.models.map((m) => `${p.id} ${m.id}`)))
    const addedEarlier = Array.isArray(cached.kept_added) ? cached.kept_added.filter((k) => listed.includes(k)) : []
    const before = keptHere ? listed : addedEarlier.filter((k) => !bundledNames.has(k))
    // Its entries are taken out only from a list of providers with models (a file written by hand or
    // another tool may hold anything): reading one that is not threw, the prices were never ready, and every call was refused.
    const shape = keptHere ? null : refuseReason(lib, cached.providers, [])
    const own = keptHere || shape ? cached.providers : withoutKept(cached.providers, listed.filter((k) => !before.includes(k)))
    const older = shape ?? refuseReason(lib, own, inUse, !sameBundle) ?? (unchecked ? (await unchargedReason(lib, own, inUse)).refused : null)
    if (older) {
      this.opts.log?.info(`prices: not using ${this.file} (${older}); keeping the bundled data`)
      return false
    }
    // A copy kept before entries were kept (./keep-known.ts) may lack models the bundled data prices.
    const known = await keepKnown(lib, own, inUse, this.bundledProviders)
    if (this.closed || !this.apply(known.data)) return false
    const newly = known.kept.filter((k) => !before.includes(k))
    this.sayKept(this.file, newly, known.notBundled)
    this.kept = [...before, ...newly]
    this.keptAdded = [...new Set([...addedEarlier.filter((k) => before.includes(k)), ...known.notBundled])]
    // Kept as checked, and naming what it keeps over which bundled data: the next start says nothing again.
    if (unchecked || newly.length || !keptHere) {
      await this.writeCache({ ...cached, providers: own, charges_checked: true, kept: this.kept, kept_added: this.keptAdded, kept_over: bundledPricesPrint(this.bundledProviders) }, read.stamp)
    }
    this.state.source = 'cached'
    this.state.updated_at = cached.updated_at ?? null
    const fetched = Date.parse(cached.fetched_at)
    const fresh = Number.isFinite(fetched) && Date.now() - fetched < this.maxAgeMs
    if (fresh) this.keptFetchedAt = fetched
    return fresh
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
      const got = await downloadPrices({
        url: this.url,
        egress: this.opts.egress,
        timeoutMs,
        signal: AbortSignal.any([deadline, this.cut.signal]),
        checked,
        checkedIso: checked.toISOString(),
        inUse: () => ({ since: this.inUseSince(), at: this.state.updated_at }),
      })
      if (got.notModified) {
        this.recovered()
        await this.keepCheckedAt()
        return false
      }
      const published = got.published
      downloaded = true
      const data = JSON.parse(got.text) as unknown
      if (this.closed) return false
      const lib = await loadPriceLibrary()
      const inUse = (await lib.waitForUpdate()) ?? []
      // Models lost are counted against the data as last downloaded: the entries kept from before are no model the download lost.
      // Charges are checked against the data in use: a kept model listed again is one it charges for.
      const shape = refuseReason(lib, data, withoutKept(inUse, this.kept))
      const charges = shape ? null : await unchargedReason(lib, data as Provider[], inUse)
      const refused = shape ?? charges!.refused
      if (refused) throw new Error(`the price data was refused: ${refused}`)
      if (this.closed) return false
      const known = await keepKnown(lib, data as Provider[], inUse, this.bundledProviders)
      if (this.closed || !this.apply(known.data, true)) return false
      this.state.source = 'updated'
      this.state.updated_at = published
      this.recovered()
      const newly = known.kept.filter((k) => !this.kept.includes(k))
      this.kept = known.kept
      this.keptAdded = known.notBundled
      await this.writeCache({ updated_at: published, fetched_at: this.state.checked_at, bundled: this.bundled, charges_checked: true, kept: known.kept, kept_added: known.notBundled, kept_over: bundledPricesPrint(this.bundledProviders), providers: known.data })
      this.opts.log?.info(`prices: updated from ${this.shown} (data of ${published})`)
      this.sayKept('the new data', newly, known.notBundled)
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

  /** Logs each entry newly kept from the data in use (./keep-known.ts), once: a mirror behind stays so day after day. `notBundled`: those only a download priced. */
  private sayKept(from: string, newly: string[], notBundled: string[]): void {
    for (const m of newly) {
      const which = notBundled.includes(m) ? 'the data in use' : 'the bundled data'
      this.opts.log?.warn(`prices: ${from} has no entry for ${m}, which ${which} prices: its price in use is kept (a price in pricing.overrides or the admin API wins)`)
    }
  }

  /** When the data in use was published; 0 for the bundled data, or a copy kept dated ahead of now by an earlier release (any download is newer). */
  private inUseSince(): number {
    const t = this.state.source === 'bundled' || !this.state.updated_at ? NaN : Date.parse(this.state.updated_at)
    return Number.isFinite(t) && t <= Date.now() ? t : 0
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
   * A 304 confirmed the kept copy in use: it is kept again (durably, as any write) with this check's
   * time as fetched_at, so the next start counts a day from it rather than checking again at once.
   */
  private async keepCheckedAt(): Promise<void> {
    if (this.closed || this.state.source === 'bundled' || !this.state.checked_at) return
    const read = await readCache(this.file, () => {})
    // Only the copy in use (another process may have kept newer data since, or may while this writes).
    if (!read || this.closed || read.cached.updated_at !== this.state.updated_at) return
    await this.writeCache({ ...read.cached, fetched_at: this.state.checked_at }, read.stamp)
  }

  /** Keeps `c` in the data folder (./update-cache.ts), saying so in the log when it cannot; `readAs`: the copy it was made from, written over only while still there. */
  private writeCache(c: Cached, readAs?: CopyStamp): Promise<void> {
    return writeCache(this.file, c, (message) => this.opts.log?.warn(`prices: could not keep the price data in ${this.file}: ${message}`), readAs)
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
