import type { ServerResponse } from 'node:http'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { ExportFormat } from './export-format'
import type { ExportWindow, Keyset } from './export-query'

/**
 * What an export thread (./export-worker.ts) is started with. The rest of the window, after
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

export type ExportThreadRequest = { type: 'more'; pages: number } | { type: 'stop' }
export type ExportThreadReply =
  /** A page of segment `seg` (`page` null when the segment had no rows left); `last` ends the segment. */
  | { type: 'page'; seg: number; last: boolean; page: Uint8Array | null; rows: number; afterTs: number; afterId: number }
  /** The thread has no more segments. */
  | { type: 'done' }
  | { type: 'error'; message: string }

/** How an export handed to threads ended: written to the end, the client gone, or a thread failed (the rest is to be written from `keyset`). */
export type ThreadOutcome = { status: 'done' } | { status: 'closed' } | { status: 'failed'; keyset: Keyset; message: string }

/** Pages a thread may have made and not yet had written: it reads ahead of the socket by this many. */
const AHEAD = 3

/**
 * Fewer calls than this left (as the first page's density foretells): read on the main thread, a
 * page per turn, as a thread's start (tens of ms, and its own heap) costs more than it would save.
 */
export const THREAD_MIN_ROWS = 50_000

let script: string | null = null
let threadsPerExport: number | null = null
let minRows = THREAD_MIN_ROWS
let started = 0

/**
 * The built export thread (out/main/export-worker.js), given by the server's entry point (a
 * missing file is ignored). Without it (run from the sources) exports are read and formatted on
 * the main thread, a page at a time between other events. Tests and the bench set `threads` per
 * export (else by the cores) and `minRows` (else THREAD_MIN_ROWS).
 */
export function useExportThread(s: URL | string | undefined, opts: { threads?: number; minRows?: number } = {}): void {
  if (s === undefined) return
  const path = typeof s === 'string' ? s : fileURLToPath(s)
  script = existsSync(path) ? path : null
  if (opts.threads !== undefined) threadsPerExport = opts.threads
  if (opts.minRows !== undefined) minRows = opts.minRows
}

export function exportThreadScript(): string | null {
  return script
}

/** Whether an export with about `rows` calls left is worth handing to threads. */
export function worthThreads(rows: number): boolean {
  return rows >= minRows
}

/** How many export threads this process has started (tests). */
export function exportThreadsStarted(): number {
  return started
}

/**
 * Threads per export: one core is left to the main thread (it serves the proxy and writes the
 * socket), the others read and format side by side, at most two (more add little: the socket
 * and the one SQLite file are shared). On a two-core machine, one thread.
 */
export function exportThreadCount(): number {
  return threadsPerExport ?? Math.max(1, Math.min(2, availableParallelism() - 1))
}

/**
 * Writes the pages that new export threads make to `res`, in order: the segments' pages as they
 * come, segment after segment. The main thread's part is one `write` of a ready buffer per page;
 * a thread is asked for its next page only once the socket has taken its last one (a `write`
 * that fills the socket's buffer holds the thread back until `drain`).
 */
export function streamFromThreads(
  path: string,
  base: Omit<ExportThreadData, 'thread' | 'threads'>,
  threads: number,
  res: ServerResponse,
): Promise<ThreadOutcome> {
  return new Promise((resolve) => {
    let keyset = base.origin
    let seg = 0
    let settled = false
    let blocked = false
    const workers: Worker[] = []
    const queues: ExportThreadReply[][] = []
    const stopAll = () => {
      for (const w of workers) void w.terminate()
    }
    const settle = (r: ThreadOutcome) => {
      if (settled) return
      settled = true
      res.off('close', onClose)
      res.off('drain', onDrain)
      stopAll()
      resolve(r)
    }
    const failed = (message: string) => settle({ status: 'failed', keyset, message })
    const onClose = () => settle({ status: 'closed' })
    const more = (w: Worker) => {
      if (!settled) w.postMessage({ type: 'more', pages: 1 } satisfies ExportThreadRequest)
    }
    let owed: Worker | null = null
    const onDrain = () => {
      blocked = false
      if (owed) more(owed)
      owed = null
      pump()
    }
    /** Writes what has come in for the segments in order, until the socket is full or the next page is not there yet. */
    const pump = () => {
      while (!settled && !blocked) {
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
        w = new Worker(path, { workerData: { ...base, thread: k, threads } satisfies ExportThreadData })
      } catch (err) {
        failed(String((err as Error)?.message ?? err))
        break
      }
      started++
      workers.push(w)
      w.unref()
      w.on('message', (m: ExportThreadReply) => {
        if (settled) return
        q.push(m)
        pump()
      })
      w.on('error', (err) => failed(String(err?.message ?? err)))
      w.on('exit', () => {
        // A thread leaves after its 'done'; before it, its segments would be missing.
        if (q.length === 0 || q[q.length - 1].type !== 'done') failed('an export thread exited')
      })
      w.postMessage({ type: 'more', pages: AHEAD } satisfies ExportThreadRequest)
    }
  })
}
