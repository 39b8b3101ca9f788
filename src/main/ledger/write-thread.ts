import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads'
import type { SideWrite } from './side-writes'
import type { PackedCalls } from './packed'
import type { CallRecord } from './record'

export type ThreadRequest =
  | { type: 'write'; id: number; rows: CallRecord[] | PackedCalls; side?: SideWrite[] }
  | { type: 'rollups'; id: number }
  | { type: 'prune'; id: number; before: number; limit: number; team: string | null }
  | { type: 'close'; id: number }

export interface ThreadReply {
  id: number
  ok: boolean
  ready?: boolean
  code?: string
  message?: string
  /** prune: how many calls were deleted, and whether old calls are left to look at. */
  deleted?: number
  more?: boolean
}

type Pending = (r: ThreadReply) => void

/**
 * The main thread's handle on the ledger's write thread (./write-worker.ts). `send` is
 * asynchronous (the answer comes to its callback on a later turn); `waitFor` blocks until an
 * answer is in, for the synchronous `Ledger.flush()`. Usable once the thread has opened the
 * database (`ready`); `broken` once it failed to start or exited: the Ledger then writes itself.
 */
export class WriteThread {
  private readonly worker: Worker
  private readonly port: MessagePort
  private readonly answered: Int32Array
  private readonly waiting = new Map<number, Pending>()
  private nextId = 0
  ready = false
  broken = false

  private constructor(script: string, dbFile: string) {
    const { port1, port2 } = new MessageChannel()
    const flag = new SharedArrayBuffer(4)
    this.answered = new Int32Array(flag)
    this.port = port1
    this.worker = new Worker(script, { workerData: { file: dbFile, flag, port: port2 }, transferList: [port2] })
    this.worker.unref()
    this.worker.on('error', () => this.fail('the write thread failed'))
    this.worker.on('exit', () => this.fail('the write thread exited'))
    port1.on('message', (r: ThreadReply) => this.settle(r))
    port1.unref()
  }

  /** The path of `script` (a built ledger-worker.js) when a write thread can run it on `dbFile`, else null. */
  static usable(script: URL | string | undefined, dbFile: string): string | null {
    if (!script || !dbFile || dbFile === ':memory:') return null
    const path = typeof script === 'string' ? script : fileURLToPath(script)
    return existsSync(path) ? path : null
  }

  /** A write thread running `script` (a built ledger-worker.js) on `dbFile`; null when there is no such script. */
  static start(script: URL | string | undefined, dbFile: string): WriteThread | null {
    const path = WriteThread.usable(script, dbFile)
    if (!path) return null
    try {
      return new WriteThread(path, dbFile)
    } catch {
      return null
    }
  }

  /** True while a request is unanswered. */
  get busy(): boolean {
    return this.waiting.size > 0
  }

  /** Hands `rows` over; `done` gets the answer. Returns the request's id (for `waitFor`). */
  send(
    req: { type: 'write'; rows: CallRecord[] | PackedCalls; side?: SideWrite[] } | { type: 'rollups' } | { type: 'prune'; before: number; limit: number; team: string | null } | { type: 'close' },
    done?: Pending,
  ): number {
    const id = ++this.nextId
    this.waiting.set(id, done ?? (() => {}))
    this.port.postMessage({ ...req, id })
    return id
  }

  /** Blocks until request `id` is answered (its callback has then run). False if no answer came within `timeoutMs`. */
  waitFor(id: number, timeoutMs: number): boolean {
    const deadline = Date.now() + timeoutMs
    while (this.waiting.has(id)) {
      const m = receiveMessageOnPort(this.port)
      if (m) {
        this.settle(m.message as ThreadReply)
        continue
      }
      const left = deadline - Date.now()
      if (left <= 0) return false
      const seen = Atomics.load(this.answered, 0)
      if (seen >= id) continue
      Atomics.wait(this.answered, 0, seen, Math.min(left, 100))
    }
    return true
  }

  /** Closes the thread's connection (waiting up to `timeoutMs`) and ends the thread. */
  close(timeoutMs = 5000): void {
    if (!this.broken && this.ready) this.waitFor(this.send({ type: 'close' }), timeoutMs)
    this.broken = true
    void this.worker.terminate()
  }

  /**
   * Ends the thread without blocking: its connection closes after every request sent before
   * (the requests are answered in order), then the thread exits. For a thread no longer used.
   */
  end(): void {
    if (this.broken) return
    this.send({ type: 'close' }, () => {
      this.broken = true
      void this.worker.terminate()
    })
  }

  private settle(r: ThreadReply): void {
    if (r.id === 0) {
      if (r.ready) this.ready = true
      else this.fail(r.message ?? 'the write thread could not open the database')
      return
    }
    const done = this.waiting.get(r.id)
    this.waiting.delete(r.id)
    done?.(r)
  }

  private fail(message: string): void {
    if (this.broken && this.waiting.size === 0) return
    this.broken = true
    const waiting = [...this.waiting.values()]
    this.waiting.clear()
    for (const done of waiting) done({ id: -1, ok: false, message })
  }
}
