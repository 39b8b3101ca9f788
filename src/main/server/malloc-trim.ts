import { createRequire } from 'node:module'

/**
 * Gives the C heap's freed memory back to the system: glibc's `malloc_trim(0)`, called through
 * koffi (a C FFI with prebuilt Node-API binaries), on Linux with glibc only.
 *
 * Why: under load, V8's GC helper threads, the ledger's write thread (SQLite's page cache and
 * statements), export threads and libuv's threads each malloc in a glibc arena of their own.
 * When the load ends they free it, but glibc keeps freed memory in each arena for reuse and
 * returns only what sits at the top of one: measured, about 30 MiB stayed resident 45 s after a
 * load run with nothing live in it. `malloc_trim` walks every arena and returns each free page
 * (`MADV_DONTNEED`); nothing in use moves, and memory it returned is allocated again on demand.
 * It takes the arenas' locks in turn, so it runs only where nothing waits for it: after the idle
 * collection (./idle-gc.ts), once calls have been quiet for a while.
 *
 * koffi is loaded the first time this runs (not at start: at rest there is little to give back,
 * less than its own code costs). Where it or glibc is missing (macOS, Windows, musl), this does
 * nothing.
 */
type Trim = () => void

let trim: Trim | null | undefined

/** True when the C heap was trimmed, false where this platform cannot. */
export function releaseFreedMemory(): boolean {
  if (trim === undefined) trim = bind()
  if (!trim) return false
  trim()
  return true
}

function bind(): Trim | null {
  if (process.platform !== 'linux') return null
  try {
    const require = createRequire(import.meta.url)
    const koffi = require('koffi') as {
      load(path: string): { func(signature: string): (pad: number) => number }
    }
    // libc.so.6 is glibc's soname (musl's libc has another name and no malloc_trim).
    const mallocTrim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)')
    return () => {
      mallocTrim(0)
    }
  } catch {
    return null
  }
}
