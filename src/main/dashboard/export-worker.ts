/**
 * An export thread (built to out/main/export-worker.js, started by ./export-thread.ts): reads
 * its share of an export's window on its own read-only connection and formats each page into
 * one UTF-8 buffer, handed to the main thread without a copy. The window is cut into segments
 * of time, dealt out in turn to the export's threads (segment i to thread i mod n), so the threads
 * read and format side by side while the main thread writes their pages in order. A thread makes
 * a page only when the main thread has room for one (the socket's backpressure reaches the
 * reading), and stops after its last segment.
 */
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { ExportFormatter } from './export-format'
import { type Keyset, SqlitePager } from './export-query'
import { type ExportThreadData, type ExportThreadReply, type ExportThreadRequest, segmentOf } from './export-thread'

const data = workerData as ExportThreadData
const port = parentPort!

function send(m: ExportThreadReply, transfer?: ArrayBuffer[]): void {
  port.postMessage(m, transfer)
}

/** The text as bytes in a buffer of its own (one from Node's shared pool cannot be handed over). */
function bytes(text: string): Uint8Array {
  const b = Buffer.from(text, 'utf8')
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b)
}

let db: Database.Database | null = null
try {
  db = new Database(data.file, { readonly: true, fileMustExist: true })
  const pager = new SqlitePager(db, data.window, data.limit, data.format)
  // The main thread wrote the export's first rows: every row here follows another.
  const format = new ExportFormatter(data.format, true)
  let seg = data.thread
  let part = segmentOf(data, seg)
  let keyset: Keyset | null = part?.keyset ?? null
  let credit = 0
  let done = false
  const finish = () => {
    done = true
    db?.close()
    db = null
    port.close()
  }
  const pump = () => {
    try {
      while (credit > 0 && !done) {
        if (part === null || keyset === null) {
          send({ type: 'done' })
          finish()
          return
        }
        credit--
        const got = pager.page(format, keyset, part.start, part.end)
        const last = got.rows < pager.limit
        if (got.keyset !== null) {
          keyset = got.keyset
          const page = bytes(got.text)
          send({ type: 'page', seg, last, page, rows: got.rows, ...keyset }, [page.buffer as ArrayBuffer])
        } else send({ type: 'page', seg, last, page: null, rows: 0, ...keyset })
        if (last) {
          seg += data.threads
          part = segmentOf(data, seg)
          keyset = part?.keyset ?? null
        }
      }
    } catch (err) {
      send({ type: 'error', message: String((err as Error)?.message ?? err) })
      finish()
    }
  }
  port.on('message', (m: ExportThreadRequest) => {
    if (m.type === 'stop') finish()
    else {
      credit += m.pages
      pump()
    }
  })
} catch (err) {
  db?.close()
  send({ type: 'error', message: String((err as Error)?.message ?? err) })
  port.close()
}
