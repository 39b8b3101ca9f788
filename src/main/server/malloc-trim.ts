import { createRequire } from 'node:module'

/**
 * Gives the C heap's freed memory back to the system, on Linux with glibc only, through koffi
 * (a C FFI with prebuilt Node-API binaries): glibc's `malloc_trim(0)`, and its trim threshold
 * lowered while the server is quiet.
 *
 * Why: under load, V8's GC helper threads, the ledger's write thread (SQLite's page cache and
 * statements), export threads and libuv's threads each malloc in a glibc arena of their own.
 * When the load ends they free it, but glibc keeps freed memory in each arena for reuse.
 * `malloc_trim` walks every arena and returns each free page that sits in its free lists
 * (`MADV_DONTNEED`); nothing in use moves, and memory it returned is allocated again on demand.
 * It takes the arenas' locks in turn, so it runs only where nothing waits for it: after the idle
 * collection (./idle-gc.ts), once calls have been quiet for a while.
 *
 * What `malloc_trim` leaves is the free space at the top of each thread's arena (glibc trims only
 * the main heap's top there): a thread's arena gives its top back only when that thread frees
 * into it and the top is larger than the trim threshold, which glibc raises to twice the largest
 * mmapped chunk freed so far (about 14 MiB after a load run here). So the write thread's SQLite
 * cache, freed when the thread ends, stayed resident (10-13 MiB), and so did the tops of V8's
 * helper threads' arenas. `lowerTrimThreshold` sets the threshold to 128 KiB (glibc's default)
 * while the server is quiet, so that those frees (the write thread's end, the helpers' work in
 * the idle collection) give the top back; `restoreTrimThreshold` raises it again as soon as a
 * request comes, so calls run with the threshold as high as glibc itself can raise it.
 *
 * koffi is loaded the first time one of these runs (not at start: at rest there is little to give
 * back, less than its own code costs). Where it or glibc is missing (macOS, Windows, musl), they
 * do nothing.
 */
interface Libc {
  trim(): void
  setTrimThreshold(bytes: number): boolean
  setMmapThreshold(bytes: number): boolean
}

let libc: Libc | null | undefined

/** glibc's functions, bound the first time they are needed; null where this platform has none. */
function loaded(): Libc | null {
  if (libc === undefined) libc = bind()
  return libc
}

/** True when the C heap was trimmed, false where this platform cannot. */
export function releaseFreedMemory(): boolean {
  const c = loaded()
  if (!c) return false
  c.trim()
  return true
}

/** glibc's `M_TRIM_THRESHOLD` and `M_MMAP_THRESHOLD` (mallopt's parameter numbers). */
const M_TRIM_THRESHOLD = -1
const M_MMAP_THRESHOLD = -3
/** Chunks this large or larger are mmapped: glibc's default before any load (it raises it as mmapped chunks are freed, up to 32 MiB). */
const MMAP_THRESHOLD = 128 * 1024
/** The threshold while quiet: glibc's default before any load. */
const QUIET_TRIM_THRESHOLD = 128 * 1024
/**
 * The threshold while calls come: the highest glibc's own adjustment reaches (twice its largest
 * mmap threshold, 32 MiB on 64-bit), so that calls never trim more often than glibc would have.
 */
const BUSY_TRIM_THRESHOLD = 64 * 1024 * 1024

let lowered = false

/**
 * Stops glibc adjusting its thresholds as calls run (after the first proxied call): chunks of
 * 128 KiB or more are always mmapped, so they go back to the system when freed, and the trim
 * threshold is the one calls run with. Why: glibc raises its mmap threshold to the size of every
 * mmapped chunk freed (up to 32 MiB), so from then on chunks that large come from the thread's
 * own arena and end in its top when freed. Under the first load, V8's helper threads tier up
 * undici's HTTP parser (WebAssembly) with its optimizing compiler, whose zones grow by doubling
 * (1.8, 3.7, 7.5 MiB): the first chunks of each size were mmapped and raised the threshold, later
 * ones came from the helper's arena and stayed in its top, resident for good unless that helper
 * freed into its arena again while the server was quiet (the lowered threshold below). True when
 * set, false where this platform cannot.
 */
export function fixMmapThreshold(): boolean {
  const c = loaded()
  if (!c || !c.setMmapThreshold(MMAP_THRESHOLD)) return false
  if (!lowered) c.setTrimThreshold(BUSY_TRIM_THRESHOLD)
  return true
}

/**
 * Lowers glibc's trim threshold while the server is quiet (see above). True when it is lowered,
 * false where this platform cannot. Setting it fixes glibc's mmap threshold where its load has
 * left it (glibc stops adjusting both once one is set).
 */
export function lowerTrimThreshold(): boolean {
  if (lowered) return true
  const c = loaded()
  if (!c || !c.setTrimThreshold(QUIET_TRIM_THRESHOLD)) return false
  lowered = true
  return true
}

/** Raises the trim threshold again (for calls) if it was lowered; cheap when it was not. */
export function restoreTrimThreshold(): void {
  if (!lowered) return
  lowered = false
  libc?.setTrimThreshold(BUSY_TRIM_THRESHOLD)
}

function bind(): Libc | null {
  if (process.platform !== 'linux') return null
  try {
    const require = createRequire(import.meta.url)
    const koffi = require('koffi') as {
      load(path: string): { func(signature: string): (...args: number[]) => number }
    }
    // libc.so.6 is glibc's soname (musl's libc has another name and no malloc_trim).
    const c = koffi.load('libc.so.6')
    const mallocTrim = c.func('int malloc_trim(size_t pad)')
    const mallopt = c.func('int mallopt(int param, int value)')
    return {
      trim: () => {
        mallocTrim(0)
      },
      setTrimThreshold: (bytes) => mallopt(M_TRIM_THRESHOLD, bytes) === 1,
      setMmapThreshold: (bytes) => mallopt(M_MMAP_THRESHOLD, bytes) === 1,
    }
  } catch {
    return null
  }
}
