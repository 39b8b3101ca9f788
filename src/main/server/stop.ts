import type http from 'node:http'
import type { Egress } from '../http/egress'
import { Ledger } from '../ledger/ledger'
import type { Logger } from '../log'
import { settleEstimates } from '../metering/estimator'
import { stopIdleExportThreads } from '../dashboard/export-thread'
import { cutAtStop } from '../proxy/call/stop-cut'
import type { ProxyHandler } from '../proxy/handler'
import { keepPending as spillPending } from '../reliability/spill'
import type { OpenConnections } from './connections'
import type { DataFolder } from './data-folder'
import type { IdleCollector } from './idle-gc'
import { journalIdle } from './journal-idle'

/** What a server holds that its stop lets go of, in its order. */
export interface Held extends DataFolder {
  dataDir: string
  log: Logger
  egress: Egress
  /** The features' close steps (onClose), run before the ledger's last flush. */
  closers: (() => void | Promise<void>)[]
}

/** What serves calls once started: stopped first, the calls under way let finish or cut. */
export interface Serving {
  idle: IdleCollector | null
  servers: () => (http.Server | null)[]
  proxy: ProxyHandler
  connections: OpenConnections
}

/** One step of a stop: a failure (thrown, or rejected) is logged and the stop goes on to the next. False when it failed. */
export async function stopStep(log: Logger, what: string, fn: () => unknown): Promise<boolean> {
  try {
    await fn()
    return true
  } catch (err) {
    log.error(`stopping: ${what} failed (${(err as Error)?.message ?? err}); the stop goes on`)
    return false
  }
}

/** After the ledger's last flush failed: its queue to a spill file, without waiting on the lock again (SQLite; PostgreSQL's close journals its own). */
function spillAfterClose(h: Held, flushed: boolean): void {
  if (!flushed && h.storage.ledger instanceof Ledger) spillPending(h.storage.ledger, h.dataDir, h.log, { flushFirst: false })
}

/**
 * A feature refused the config: what already started (a PostgreSQL ledger's timers and pool,
 * features' timers) stops, and nothing recorded is lost. Each step whatever another does: one that
 * threw ended this before the ledger's last flush, and the folder stayed claimed.
 */
export async function abandonStart(h: Held): Promise<void> {
  const { log, storage } = h
  const ledger = storage.ledger
  for (const fn of h.closers) await stopStep(log, "a feature's close step", fn)
  await stopStep(log, "the ledger's last flush", async () => spillAfterClose(h, await ledger.close()))
  await stopStep(log, 'the spill journal', () => journalIdle(ledger, log))
  await storage.close().catch(() => {})
  await stopStep(log, 'the network client', () => h.egress.close())
  await stopStep(log, 'the database', () => h.db.close())
  h.lock.release()
}

/** BurnrateServer.close: see there. */
export async function stopServer(h: Held, s: Serving, graceMs: number): Promise<boolean> {
  const { log, storage } = h
  const proxy = s.proxy
  const ledger = storage.ledger
  let ok = true
  const step = async (what: string, fn: () => unknown) => {
    if (!(await stopStep(log, what, fn))) ok = false
  }
  s.idle?.stop()
  for (const server of s.servers()) {
    server?.close()
    server?.closeIdleConnections()
  }
  await proxy.drain(graceMs)
  // Whatever is still streaming is cut; those calls are recorded as cut by the stop (503 burnrate_stopped).
  for (const c of s.connections.all()) cutAtStop(c)
  // ...and so are the answers read on for their bill after their client left (recorded 499 with what came).
  proxy.stopLeftAnswers()
  if (!(await proxy.drain(2_000))) {
    // Estimates still being counted are taken from their length rather than lost.
    settleEstimates()
    await proxy.drain(1_000)
  }
  // Every step runs, and the ledger's last flush after them, whichever fails: a step that
  // threw ended the stop here, its queue unwritten (the headless server exits as it settles).
  for (const fn of h.closers) await step("a feature's close step", fn)
  // Last: what the closers recorded too (a hold let go, a settled estimate) is in this flush or the spill file.
  await step("the ledger's last flush", async () => spillAfterClose(h, await ledger.close()))
  await step('the spill journal', () => journalIdle(ledger, log))
  await step('the proxy', () => proxy.close())
  await step('the network client', () => h.egress.close())
  // (Not a failed stop: a pool that does not close cleanly loses nothing.)
  await storage.close().catch((err: Error) => log.warn(`closing the shared store: ${err.message}`))
  await step('the database', () => h.db.close())
  h.lock.release()
  // Export threads kept for a next export (none is under way: the connections are gone).
  stopIdleExportThreads()
  return ok
}

/** BurnrateServer.keepPending: see there. `exits` are the features' onExit steps. */
export async function keepPendingAtExit(h: Held, s: Serving, exits: (() => Promise<void>)[]): Promise<void> {
  // The calls under way are cut, as a stop past its grace cuts them, and so recorded (the
  // upstream has billed what it sent) before the queue is kept: an exit loses them otherwise.
  for (const c of s.connections.all()) cutAtStop(c)
  s.proxy.stopLeftAnswers()
  if (!(await s.proxy.drain(1_000))) {
    settleEstimates()
    await s.proxy.drain(1_000)
  }
  await keepQueued(h)
  // The calls just recorded (cut, settled) are in the ledger: the OTLP export sends them too.
  await Promise.allSettled(exits.map((fn) => fn()))
}

/** The ledger's queue, written, or kept in a spill file when the database cannot take it. */
async function keepQueued(h: Held): Promise<void> {
  const ledger = h.storage.ledger
  // A call answered whose usage is being estimated (a background job's queued answer reports
  // none) is recorded, with its hold, once the estimate is in: a turn after it is settled.
  settleEstimates()
  await new Promise<void>((r) => setImmediate(r))
  if (ledger instanceof Ledger) {
    spillPending(ledger, h.dataDir, h.log)
    // The exit follows at once: the journal's file work (its removal once the flush stored what it
    // held, an append still opening it) ends first, or the next start would apply its rows again.
    await journalIdle(ledger, h.log)
  } else if (ledger.keepQueued) await ledger.keepQueued()
  else ledger.flush()
}
