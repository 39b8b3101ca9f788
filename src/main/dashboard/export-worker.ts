/**
 * An export thread (built to out/main/export-worker.js, started by ./export-thread.ts): reads
 * its share of an export's window on its own read-only connection and formats each page into
 * one UTF-8 buffer, handed to the main thread without a copy. The window is cut into segments
 * of time, dealt out in turn to the export's threads (segment i to thread i mod n), so the threads
 * read and format side by side while the main thread writes their pages in order. A thread makes
 * a page only when the main thread has room for one (the socket's backpressure reaches the
 * reading). After its last segment it closes its connection and waits for another export (the
 * main thread keeps an idle thread a while, so the next export starts at once, its code compiled).
 */
import { parentPort } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { ExportFormatter } from './export-format'
import { type Keyset, SqlitePager } from './export-query'
import { type ExportThreadData, type ExportThreadReply, type ExportThreadRequest, segmentOf } from './export-thread'

const port = parentPort!

function send(m: ExportThreadReply, transfer?: ArrayBuffer[]): void {
  port.postMessage(m, transfer)
}

/**
 * The page as bytes in memory of their own, to be handed over (a slice of Node's shared pool
 * cannot be): as the formatter wrote them into a buffer of its own (its unused end goes along),
 * or, for a page read plainly (a joined text that failed), its text encoded here.
 */
function bytes(text: string | Buffer): Uint8Array {
  if (typeof text !== 'string') return text
  const b = Buffer.from(text, 'utf8')
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b)
}

/** One export's share: its connection, the segment under way and the pages the main thread has room for. */
class Job {
  private db: Database.Database | null
  private readonly pager: SqlitePager
  private readonly format: ExportFormatter
  private seg: number
  private part: ReturnType<typeof segmentOf>
  private keyset: Keyset | null
  private credit = 0

  constructor(
    readonly id: number,
    private readonly data: ExportThreadData,
  ) {
    this.db = new Database(data.file, { readonly: true, fileMustExist: true })
    try {
      this.pager = new SqlitePager(this.db, data.window, data.limit)
    } catch (err) {
      this.close()
      throw err
    }
    // The main thread wrote the export's first rows: every row here follows another.
    this.format = new ExportFormatter(data.format, true)
    this.seg = data.thread
    this.part = segmentOf(data, this.seg)
    this.keyset = this.part?.keyset ?? null
  }

  get done(): boolean {
    return this.db === null
  }

  close(): void {
    this.db?.close()
    this.db = null
  }

  more(pages: number): void {
    this.credit += pages
    const job = this.id
    try {
      while (this.credit > 0 && !this.done) {
        if (this.part === null || this.keyset === null) {
          this.close()
          send({ type: 'done', job })
          return
        }
        this.credit--
        const got = this.pager.page(this.format, this.keyset, this.part.start, this.part.end)
        const last = got.rows < this.pager.limit
        if (got.keyset !== null) {
          this.keyset = got.keyset
          const page = bytes(got.text)
          send({ type: 'page', job, seg: this.seg, last, page, rows: got.rows, ...this.keyset }, [page.buffer as ArrayBuffer])
        } else send({ type: 'page', job, seg: this.seg, last, page: null, rows: 0, ...this.keyset })
        if (last) {
          this.seg += this.data.threads
          this.part = segmentOf(this.data, this.seg)
          this.keyset = this.part?.keyset ?? null
        }
      }
    } catch (err) {
      this.close()
      send({ type: 'error', job, message: String((err as Error)?.message ?? err) })
    }
  }
}

let job: Job | null = null
port.on('message', (m: ExportThreadRequest) => {
  if (m.type === 'export') {
    job?.close()
    job = null
    try {
      job = new Job(m.job, m.data)
    } catch (err) {
      send({ type: 'error', job: m.job, message: String((err as Error)?.message ?? err) })
    }
  } else if (m.type === 'stop') {
    job?.close()
    job = null
  } else if (job !== null && m.job === job.id) job.more(m.pages)
})
