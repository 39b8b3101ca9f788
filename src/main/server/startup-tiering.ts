import { setFlagsFromString } from 'node:v8'

/**
 * Keeps V8's optimizing compiler (TurboFan) off while the headless server starts, and turns it
 * back on as soon as the server listens, before any call can arrive.
 *
 * Start-up runs most of its code once, but Node's module resolution calls its `path` helpers
 * for every `require` of express's, undici's and better-sqlite3's files (about 1,300
 * `path.resolve` calls), enough for V8 to optimize one of them (`normalizeString`) with
 * TurboFan. That first TurboFan compilation pages in about 5 MiB of the compiler's own code from
 * the Node binary, which then stays resident for as long as the process is idle. With TurboFan
 * held during start-up, that helper stays in Maglev (V8's mid tier, still on), and the compiler
 * is back on before the first call: the calls' hot code is optimized as before, and the
 * compiler's pages come in with the first calls instead of at start. (How much resolution runs
 * depends on the install path's length, so bundling fewer files would not be enough alone.)
 *
 * V8 keys its code cache by its flags, so Node's own modules compiled while the flag is changed
 * would not use the code cache built into Node (about 100 of them, 20-50 ms of start-up). The
 * built-in modules the server loads in any case are therefore loaded first (STARTUP_BUILTINS);
 * a dozen small internal ones that load lazily later are compiled from source.
 *
 * If the process was started with a flag about V8's optimizing tiers (`--no-turbofan`,
 * `--jitless`, ...), nothing is touched.
 */

/**
 * Node's public built-in modules a default headless start loads anyway (the server's and its
 * libraries' imports, and what they load: net loads cluster, cluster dgram and child_process).
 * Nothing here may be something the server would not load: it would only add memory.
 * `test/startup/tiering.test.ts` checks their code cache is used. (`node:tls` and `node:http2`
 * load with undici, after start-up: `holdAgain`.)
 */
export const STARTUP_BUILTINS = [
  'node:util',
  'node:worker_threads',
  'node:fs/promises',
  'node:perf_hooks',
  'node:net',
  'node:crypto',
  'node:zlib',
  'node:vm',
  'node:tty',
  'node:http',
  'node:assert',
  'node:dns',
  'node:cluster',
  'node:child_process',
  'node:dgram',
] as const

const TIERING_FLAG = /(^|\s)--(no-)?(turbofan|opt|jitless|max-opt|maglev)\b/

/** Whether node's own arguments or NODE_OPTIONS already set V8's optimizing tiers. */
export function tieringSetByUser(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  return execArgv.some((a) => TIERING_FLAG.test(a)) || TIERING_FLAG.test(nodeOptions)
}

/**
 * Loads STARTUP_BUILTINS, then turns TurboFan off until the returned function is called
 * (idempotent). Does nothing where the user chose the tiers, or where V8's flags cannot be set
 * at run time.
 */
export function holdOptimizingCompiler(set: (flags: string) => void = setFlagsFromString, builtins: readonly string[] = STARTUP_BUILTINS): () => void {
  if (tieringSetByUser()) return () => {}
  if (typeof process.getBuiltinModule === 'function') for (const name of builtins) process.getBuiltinModule(name)
  try {
    set('--no-turbofan')
  } catch {
    return () => {}
  }
  heldAtStart = set
  let held = true
  return () => {
    if (!held) return
    held = false
    set('--turbofan')
  }
}

/** How the start-up hold set V8's flags (null: start-up did not hold the compiler). */
let heldAtStart: ((flags: string) => void) | null = null
/** Holds taken again and not yet resumed: the compiler comes back when the last is. */
let holdsAgain = 0

/**
 * Holds TurboFan again while start-up's deferred code loads (undici and the API app's express, a
 * moment after the server listens: ./server.ts, ./api-app.ts), for the same reason as at
 * start-up; only in a process whose start-up held it. A call that comes meanwhile runs in Maglev
 * for those few tens of ms. `builtins` (Node's modules the deferred code loads) are loaded first,
 * so that they use Node's code cache. Holds may overlap (a dashboard request may start express's
 * load before the preload loads undici): TurboFan comes back once every one has resumed.
 */
export function holdAgain(builtins: readonly string[] = []): () => void {
  const set = heldAtStart
  if (!set) return () => {}
  if (typeof process.getBuiltinModule === 'function') for (const name of builtins) process.getBuiltinModule(name)
  if (holdsAgain++ === 0) set('--no-turbofan')
  let held = true
  return () => {
    if (!held) return
    held = false
    if (--holdsAgain === 0) set('--turbofan')
  }
}
