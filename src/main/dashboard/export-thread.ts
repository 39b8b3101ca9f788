import type { ServerResponse } from 'node:http'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { ExportFormat } from './export-format'
import type { ExportWindow, Keyset } from './export-query'

/**
 * What an export thread (./export-worker.ts) is handed an export with. The rest of the window, after
 * `origin`, is cut into segments of `span` ms: segment 0 is `[window.start, origin.afterTs +
 * span)` read after `origin`, segment i is `[origin.afterTs + i * span, ... + span)`, the last
 * one ending at `window.end`. Thread `thread` of `threads` reads segments thread, thread +
 * threads, ...
 */
export interface ExportThreadData {
  /** The SQLite ledger's file (the thread opens it read-only). */
  file: string
  format: ExportFormat
  window: ExportWindow
  /** After the rows already written. */
  origin: Keyset
  span: number
  thread: number
  threads: number
  /** Rows per page. */
  limit: number
}

/** Segment `i` of an export handed to threads (null past the window's end). */
export function segmentOf(d: Pick<ExportThreadData, 'window' | 'origin' | 'span'>, i: number): { start: number; end: number; keyset: Keyset } | null {
  const start = i === 0 ? d.window.start : d.origin.afterTs + i * d.span
  if (start >= d.window.end) return null
  const end = Math.min(d.origin.afterTs + (i + 1) * d.span, d.window.end)
  return { start, end, keyset: i === 0 ? d.origin : { afterTs: start - 1, afterId: 0 } }
}

/** To a thread: an export's share (`job` numbers it; every reply carries it), room for more pages of it, or stop it. */
export type ExportThreadRequest =
  | { type: 'export'; job: number; data: ExportThreadData }
  | { type: 'more'; job: number; pages: number }
  | { type: 'stop' }
export type ExportThreadReply =
  /** A page of segment `seg` (`page` null when the segment had no rows left); `last` ends the segment. */
  | { type: 'page'; job: number; seg: number; last: boolean; page: Uint8Array | null; rows: number; afterTs: number; afterId: number }
  /** The thread has no more segments (it waits for another export). */
  | { type: 'done'; job: number }
  | { type: 'error'; job: number; message: string }

/** How an export handed to threads ended: written to the end, the client gone, or a thread failed (the rest is to be written from `keyset`). */
export type ThreadOutcome = { status: 'done' } | { status: 'closed' } | { status: 'failed'; keyset: Keyset; message: string }

/** Pages a thread may have made and not yet had written: it reads ahead of the socket by this many. */
const AHEAD = 3

/**
 * An export of fewer calls than this is read on the main thread, a page per turn, unless a
 * thread is idle (below): a thread's start (tens of ms before its first row, then its code runs
 * slower until compiled, and its own heap) would cost more than it saves. Counted from the
 * export's index before the first page (not foretold from the first page's density: one
 * tenant's calls scattered through a busy table, or a burst late in the window, fooled that).
 */
export const THREAD_MIN_ROWS = 50_000

/**
 * With enough threads idle (kept from an export that ended, below), an export of this many
 * calls is handed to them: they start at once, compiled, and the main thread reads only the
 * export's first MAIN_ROWS calls (one tenant's 37k calls of a month at 10M calls, say).
 */
export const IDLE_THREAD_MIN_ROWS = 20_000

/**
 * The calls the main thread reads and writes itself at the start of a threaded export, while
 * its threads start (a thread takes tens of ms before it reads a row): the threads read from
 * the time of the call at this offset on, so their start costs the export no time.
 */
export const MAIN_ROWS = 8_000

/**
 * The calls the main thread reads first when the export's threads are idle (kept from an export
 * before: they start at once, their code compiled): one of its pages, so that the threads, which
 * read faster (the main thread's code runs slower until compiled, and it also writes the
 * socket), read nearly all of a small export, one tenant's 40,000 calls of a month, say.
 */
export const IDLE_MAIN_ROWS = 2_000

/**
 * An export of fewer calls than this, handed to threads that are idle, is shared evenly: the
 * main thread reads the first of every `threads + 1` parts while the threads read the rest side by
 * side, each reading all of its share ahead (held as pages until the main thread's part is written:
 * at most this many calls, 13 MiB of CSV or 29 MiB of JSON). One tenant's calls are scattered
 * through the table, so reading them is the export's slowest part, and two readers make it on two
 * cores in about half the time.
 */
export const SHARE_MAX_ROWS = 50_000

let script: string | null = null
let threadsPerExport: number | null = null
let minRows = THREAD_MIN_ROWS
let idleMinRows = IDLE_THREAD_MIN_ROWS
let mainRows = MAIN_ROWS
let idleMainRows = IDLE_MAIN_ROWS
let shareMaxRows = SHARE_MAX_ROWS
let shared = 0
let used = 0
let created = 0
let jobs = 0

/**
 * A thread whose export ended cleanly waits this long for the next one (it is then stopped, so
 * nothing is held at rest): one started anew costs tens of ms before its first row, and its code
 * runs slower until compiled, which an export of one tenant's tens of thousands of calls feels.
 */
export const IDLE_MS = 30_000
let idleMs = IDLE_MS
/** Idle threads, by script, with the timer that stops each. */
const idle: { path: string; w: Worker; timer: NodeJS.Timeout; stop: () => void }[] = []

function takeThread(path: string): Worker {
  const i = idle.findIndex((t) => t.path === path)
  if (i >= 0) {
    const t = idle.splice(i, 1)[0]
    clearTimeout(t.timer)
    t.w.off('exit', t.stop)
    t.w.off('error', t.stop)
    return t.w
  }
  const w = new Worker(path)
  created++
  w.unref()
  return w
}

/** An idle thread waits for the next export, until IDLE_MS pass or it fails. */
function keepThread(path: string, w: Worker): void {
  const stop = () => {
    const i = idle.findIndex((t) => t.w === w)
    if (i >= 0) idle.splice(i, 1)
    clearTimeout(entry.timer)
    void w.terminate()
  }
  const entry = { path, w, stop, timer: setTimeout(stop, idleMs) }
  entry.timer.unref()
  w.on('exit', stop)
  w.on('error', stop)
  idle.push(entry)
}

/** Stops every idle export thread (tests; the server's close). */
export function stopIdleExportThreads(): void {
  for (const t of [...idle]) t.stop()
}

/**
 * The built export thread (out/main/export-worker.js), given by the server's entry point (a
 * missing file is ignored). Without it (run from the sources) exports are read and formatted on
 * the main thread, a page at a time between other events. Tests and the bench set `threads` per
 * export (else by the cores), `minRows` (else THREAD_MIN_ROWS), `idleMinRows` (else
 * IDLE_THREAD_MIN_ROWS, or `minRows` when lower), `mainRows` (else MAIN_ROWS), `idleMainRows` (else
 * IDLE_MAIN_ROWS, or `mainRows` when lower), `shareMaxRows` (else SHARE_MAX_ROWS) and `idleMs` (else IDLE_MS).
 */
export function useExportThread(
  s: URL | string | undefined,
  opts: { threads?: number; minRows?: number; idleMinRows?: number; mainRows?: number; idleMainRows?: number; shareMaxRows?: number; idleMs?: number } = {},
): void {
  if (s === undefined) return
  const path = typeof s === 'string' ? s : fileURLToPath(s)
  script = existsSync(path) ? path : null
  if (opts.threads !== undefined) threadsPerExport = opts.threads
  if (opts.minRows !== undefined) minRows = opts.minRows
  if (opts.idleMinRows !== undefined) idleMinRows = opts.idleMinRows
  else if (opts.minRows !== undefined) idleMinRows = Math.min(IDLE_THREAD_MIN_ROWS, opts.minRows)
  if (opts.mainRows !== undefined) mainRows = opts.mainRows
  if (opts.idleMainRows !== undefined) idleMainRows = opts.idleMainRows
  else if (opts.mainRows !== undefined) idleMainRows = Math.min(IDLE_MAIN_ROWS, opts.mainRows)
  if (opts.shareMaxRows !== undefined) shareMaxRows = opts.shareMaxRows
  if (opts.idleMs !== undefined) idleMs = opts.idleMs
}

export function exportThreadScript(): string | null {
  return script
}

/**
 * How many calls an export needs to be handed to `threads` threads (fewer when that many are
 * idle for `path`), how many of them the main thread writes first (fewer when they are idle), and
 * below how many calls the export is shared evenly (`share`: only when they are idle, else 0).
 */
export function threadRows(path?: string, threads = 1): { min: number; main: number; share: number } {
  const ready = path !== undefined && idle.filter((t) => t.path === path).length >= threads
  return { min: ready ? idleMinRows : minRows, main: ready ? idleMainRows : mainRows, share: ready ? shareMaxRows : 0 }
}

/** Counts an export shared evenly with the main thread (tests). */
export function noteSharedExport(): void {
  shared++
}

/** How many exports this process has shared evenly between the main thread and idle threads (tests). */
export function exportsShared(): number {
  return shared
}

/** How many times this process has handed an export's share to a thread, new or idle (tests). */
export function exportThreadsUsed(): number {
  return used
}

/** How many export threads this process has started (tests). */
export function exportThreadsCreated(): number {
  return created
}

/** How many export threads wait for a next export (tests). */
export function exportThreadsIdle(): number {
  return idle.length
}

/**
 * Threads per export: one core is left to the main thread (it serves the proxy and writes the
 * socket), the others read and format side by side, at most two (more add little: the socket
 * and the one SQLite file are shared). On a two-core machine, one thread.
 */
export function exportThreadCount(): number {
  return threadsPerExport ?? Math.max(1, Math.min(2, availableParallelism() - 1))
}

/** Export threads under way: their pages wait until `release`; `outcome` says how the export handed to them ended; `cancel` stops them. */
export interface ExportThreads {
  release(): void
  cancel(): void
  outcome: Promise<ThreadOutcome>
}

/**
 * Starts export threads on the rest of an export and writes their pages to `res`, in order,
 * once released (the main thread writes the export's first calls meanwhile): the segments'
 * pages as they come, segment after segment. Until then each thread reads up to `ahead` (AHEAD) pages
 * ahead. The main thread's part is one `write` of a ready buffer per page; a thread is asked
 * for its next page only once the socket has taken its last one (a `write` that fills the
 * socket's buffer holds the thread back until `drain`).
 */
export function startExportThreads(
  path: string,
  base: Omit<ExportThreadData, 'thread' | 'threads'>,
  threads: number,
  res: ServerResponse,
  ahead = AHEAD,
): ExportThreads {
  let held = true
  let pump = () => {}
  let cancel = () => {}
  const outcome = new Promise<ThreadOutcome>((resolve) => {
    let keyset = base.origin
    let seg = 0
    let settled = false
    let blocked = false
    const job = ++jobs
    const workers: Worker[] = []
    const queues: ExportThreadReply[][] = []
    const listeners: (() => void)[] = []
    const settle = (r: ThreadOutcome) => {
      if (settled) return
      settled = true
      res.off('close', onClose)
      res.off('drain', onDrain)
      for (const off of listeners) off()
      // Threads that wrote the whole export wait for the next one; any other is stopped (it may be mid-page, or broken).
      for (const w of workers) if (r.status === 'done') keepThread(path, w)
      else void w.terminate()
      resolve(r)
    }
    const failed = (message: string) => settle({ status: 'failed', keyset, message })
    const onClose = () => settle({ status: 'closed' })
    cancel = onClose
    const more = (w: Worker) => {
      if (!settled) w.postMessage({ type: 'more', job, pages: 1 } satisfies ExportThreadRequest)
    }
    let owed: Worker | null = null
    const onDrain = () => {
      // A drain of the main thread's own writes, before the threads' turn, is not theirs.
      if (held) return
      blocked = false
      if (owed) more(owed)
      owed = null
      pump()
    }
    /** Writes what has come in for the segments in order, until the socket is full or the next page is not there yet. */
    pump = () => {
      while (!settled && !held && !blocked) {
        const k = seg % threads
        const m = queues[k].shift()
        if (m === undefined) return
        if (m.type === 'done') return settle({ status: 'done' })
        if (m.type === 'error') return failed(m.message)
        if (m.seg !== seg) return failed(`the export thread answered segment ${m.seg} for ${seg}`)
        if (m.last) seg++
        if (m.page === null) {
          more(workers[k])
          continue
        }
        if (res.destroyed) return onClose()
        const ok = res.write(m.page)
        keyset = { afterTs: m.afterTs, afterId: m.afterId }
        if (ok) more(workers[k])
        else {
          blocked = true
          owed = workers[k]
        }
      }
    }
    res.on('close', onClose)
    res.on('drain', onDrain)
    for (let k = 0; k < threads && !settled; k++) {
      const q: ExportThreadReply[] = []
      queues.push(q)
      let w: Worker
      try {
        w = takeThread(path)
      } catch (err) {
        failed(String((err as Error)?.message ?? err))
        break
      }
      used++
      workers.push(w)
      const onMessage = (m: ExportThreadReply) => {
        // A reply to an export before this one (a thread kept idle may still answer it) is not this export's.
        if (settled || m.job !== job) return
        q.push(m)
        pump()
      }
      const onError = (err: Error) => failed(String(err?.message ?? err))
      const onExit = () => failed('an export thread exited')
      w.on('message', onMessage)
      w.on('error', onError)
      w.on('exit', onExit)
      listeners.push(() => {
        w.off('message', onMessage)
        w.off('error', onError)
        w.off('exit', onExit)
      })
      w.postMessage({ type: 'export', job, data: { ...base, thread: k, threads } } satisfies ExportThreadRequest)
      w.postMessage({ type: 'more', job, pages: ahead } satisfies ExportThreadRequest)
    }
  })
  return {
    outcome,
    release() {
      held = false
      pump()
    },
    cancel: () => cancel(),
  }
}
