/**
 * The ledger's write thread (built to out/main/ledger-worker.js, used by the headless server):
 * writes the batches the main thread hands it, each in one transaction on its own connection,
 * with the dashboard rollups when asked, so that the INSERTs, rollup upserts, commits and WAL
 * checkpoints do not take the event loop's time. It only writes: what to write, when, and
 * what to do when a write fails stay with the main thread's Ledger.
 */
import { type MessagePort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { RollupWriter } from '../dashboard/rollup/writer'
import { CALL_COLUMNS, INSERT_KEYED_CALL_SQL, insertKeyedCalls } from './columns'
import { type SideWrite, sideWriter } from './side-writes'
import { isPacked, unpackCalls } from './packed'
import type { CallRecord } from './record'
import { type Pruned, pruneStepOn } from './retention'
import type { ThreadReply, ThreadRequest } from './write-thread'

const { file, flag, port } = workerData as { file: string; flag: SharedArrayBuffer; port: MessagePort }
const answered = new Int32Array(flag)

function reply(r: ThreadReply): void {
  // The reply is queued before the flag moves, so a main thread woken by the flag finds it.
  port.postMessage(r)
  Atomics.store(answered, 0, r.id)
  Atomics.notify(answered, 0)
}

let db: Database.Database
let write: (rows: CallRecord[], side: readonly SideWrite[]) => void
let rollups: RollupWriter | null = null
try {
  db = new Database(file, { fileMustExist: true })
  // Off the event loop, so it may wait a while for a main-thread writer (a budget rule saved).
  db.pragma('busy_timeout = 2000')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  const insert = db.prepare(INSERT_KEYED_CALL_SQL)
  const writeSide = sideWriter(db)
  const values: unknown[] = new Array(CALL_COLUMNS.length + 1)
  write = db.transaction((rows: CallRecord[], side: readonly SideWrite[]) => {
    // A call whose key is stored already (this batch written by the main thread after it gave this
    // thread up) is not inserted again, nor added to the rollups again.
    const inserted = insertKeyedCalls(insert, rows, values)
    // The rows kept before these calls (the Ledger's keepWithNextBatch: key patterns, holds), in their transaction.
    writeSide(side)
    if (rollups) rollups.onBatch(inserted)
  })
  reply({ id: 0, ok: true, ready: true })
} catch (err) {
  reply({ id: 0, ok: false, message: String((err as Error)?.message ?? err) })
  port.close()
  throw err
}

port.on('message', (m: ThreadRequest) => {
  let r: ThreadReply
  try {
    let pruned: Pruned | undefined
    if (m.type === 'write') write(isPacked(m.rows) ? unpackCalls(m.rows) : m.rows, m.side ?? [])
    else if (m.type === 'rollups') rollups = new RollupWriter(db)
    else if (m.type === 'prune') pruned = pruneStepOn(db, m.before, m.limit, m.team)
    else if (m.type === 'close') db.close()
    r = { id: m.id, ok: true, deleted: pruned?.deleted, more: pruned?.more }
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown }
    r = { id: m.id, ok: false, code: typeof e?.code === 'string' ? e.code : undefined, message: String(e?.message ?? err) }
  }
  reply(r)
  if (m.type === 'close') port.close()
})
