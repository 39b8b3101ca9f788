import { createHash, randomBytes } from 'node:crypto'
import { renameSync, statSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Provider } from '@pydantic/genai-prices'
import { untrustedReason } from '../security/owned-file'

/** The data folder's copy of the newer price data (./update.ts keeps it there). */
export const PRICES_FILE = 'prices.json'

/** The cache file: the data and when it was published. */
export interface Cached {
  updated_at: string
  fetched_at: string
  /** `bundledPrint()` of the bundled data it was accepted over (absent in copies written before it was kept). */
  bundled?: string
  /** Checked model by model when downloaded (`unchargedReason`); copies kept before that check existed lack it and are checked so when loaded. */
  charges_checked?: boolean
  /** `provider model` of each entry kept from the data in use because the download lacks it (./keep-known.ts); absent in copies written before entries were kept. */
  kept?: string[]
  /** Those of `kept` only a download priced, never the bundled data (absent in copies written before they were kept): another release's bundled data does not put them aside. */
  kept_added?: string[]
  /** `bundledPricesPrint()` of the bundled data `kept` was kept over: under other bundled prices they are that data's, not this one's. */
  kept_over?: string
  providers: Provider[]
}

let bundledPrintMemo: string | null = null
let bundledMemo: Provider[] | null = null

/** The bundled price data: the first data it is called with, taken before any newer data replaces it. */
export function bundledData(data: Provider[]): Provider[] {
  bundledMemo ??= data
  return bundledMemo
}

let bundledPricesMemo: string | null = null

/** A fingerprint of the bundled price data, prices and all (`bundledPrint` reads the ids alone), taken once. */
export function bundledPricesPrint(data: Provider[]): string {
  bundledPricesMemo ??= createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 32)
  return bundledPricesMemo
}

/**
 * A fingerprint of the bundled price data (its providers' and models' ids), taken once, before
 * any newer data replaces it. A cached copy written over the same bundled data was accepted as
 * newer than it, so it may lack models the bundled data still prices (retired upstream); a copy
 * written under another release's bundled data may be older than this one's.
 */
export function bundledPrint(data: Provider[]): string {
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
 * Which file a copy was read from: each write puts a new file in place (a rename), so a copy
 * written since has another inode, and most likely another size and time too.
 */
export interface CopyStamp {
  dev: number
  ino: number
  size: number
  mtimeMs: number
}

/** The kept copy as read, and the file it was read from. */
export interface CopyRead {
  cached: Cached
  stamp: CopyStamp
}

const stampOf = (st: CopyStamp): CopyStamp => ({ dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs })

/**
 * The kept copy in `file`, or null when there is none that may be used: none yet, unreadable,
 * not the user's own (`untrusted` is told why), or JSON that is no object.
 */
export async function readCache(file: string, untrusted: (why: string) => void): Promise<CopyRead | null> {
  let cached: Cached
  let stamp: CopyStamp
  try {
    // Only the user's own copy: in a data folder other users may write, theirs could price every call at a thousandth.
    const why = untrustedReason(file)
    if (why) {
      untrusted(why)
      return null
    }
    const h = await open(file, 'r')
    try {
      stamp = stampOf(await h.stat())
      cached = JSON.parse(await h.readFile('utf8')) as Cached
    } finally {
      await h.close()
    }
  } catch {
    return null // none yet, or unreadable: the bundled data stays
  }
  // JSON that is no object (`null`, written by hand or another tool) is no kept copy: reading its fields would throw, and no call could be priced.
  if (typeof cached !== 'object' || cached === null || Array.isArray(cached)) return null
  return { cached, stamp }
}

/** Whether `file` is still the one `stamp` was taken of (synchronous: nothing else runs before the rename that follows). */
function unchanged(file: string, stamp: CopyStamp): boolean {
  const now = statSync(file, { throwIfNoEntry: false })
  return now !== undefined && now.dev === stamp.dev && now.ino === stamp.ino && now.size === stamp.size && now.mtimeMs === stamp.mtimeMs
}

/**
 * Written to a temporary file then renamed, private to the user. The temporary file is made new
 * ('wx') under a name of its own (the server and `burnrate import` may write at once: with one
 * shared name, one removed the other's and its write failed), never opened through what is there: in a data folder other users may write, a link
 * one of them put under its name would have the data written over the file it points to. Its
 * data is on the disk before the rename, and the rename is made durable after it, so a crash or
 * a power cut leaves the last copy or the new one, never an empty or cut-short file.
 * A failure is told to `failed`: the copy already kept (if any) stays. `readAs`: the copy `c` was
 * made from; when another write has replaced it since, `c` is not written (the newer copy stays).
 */
export async function writeCache(file: string, c: Cached, failed: (message: string) => void, readAs?: CopyStamp): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    const h = await open(tmp, 'wx', 0o600)
    try {
      await h.chmod(0o600)
      await h.writeFile(JSON.stringify(c))
      await h.sync()
    } finally {
      await h.close()
    }
    // A copy written from one read (burnrate import marking it checked, a 304 keeping it) goes in
    // only while that file is still there: another writer's newer download (the server's) stays.
    // Checked and renamed in one synchronous step, as connect/files.ts' beforeRename does.
    if (readAs && !unchanged(file, readAs)) {
      await rm(tmp, { force: true }).catch(() => {})
      return
    }
    renameSync(tmp, file)
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {})
    failed((err as Error).message)
    return
  }
  await syncFolder(dirname(file))
}

/** Makes a rename in `dir` durable; where a folder cannot be synced (Windows: NTFS journals it), nothing more is done. */
async function syncFolder(dir: string): Promise<void> {
  if (process.platform === 'win32') return
  try {
    const h = await open(dir, 'r')
    try {
      await h.sync()
    } finally {
      await h.close()
    }
  } catch {
    // the copy is in place; only its durability across a power cut is left to the file system
  }
}
