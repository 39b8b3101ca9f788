import { rmSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import type { Logger } from '../log'
import { SpillCut, readSpilled, rewriteSpill } from '../reliability/spill-file'
import { SpillJournal } from './pg/journal'
import type { CallRecord } from './record'
import type { SideWrite } from './side-writes'

/**
 * The SQLite ledger's journal while its database cannot be written (locked, full, read-only): the
 * calls waiting in memory are appended, each with its key, to a spill file of the data folder
 * (private: 0600) a tick after they are recorded, as the PostgreSQL ledger does while PostgreSQL
 * is away (./pg/spill.ts), and so are the rows waiting to be written with them (./side-writes.ts:
 * a background job's budget hold kept or let go, a key's rule patterns, a budget threshold
 * announced), so a process killed outright (SIGKILL, an OOM kill, a power cut) meanwhile
 * leaves them on disk, and the next start stores them (../reliability/spill.ts: calls once each, by
 * key; side rows are idempotent). Appends are asynchronous, one at a time, never on a call's way.
 * Once nothing of the journal waits any more (the database took it), the file is removed; a call
 * that left memory (past `ledger.max_pending`) keeps it for the next start, which stores what the
 * database lacks.
 */
export class LedgerJournal {
  private journal: SpillJournal | null = null
  private appending: Promise<void> | null = null
  /** The calls and side rows in the open journal. */
  private onDisk = new WeakSet<object>()
  /** The calls of the append under way. */
  private appendingRows = new WeakSet<CallRecord>()
  /** Calls that left memory while the append holding them was under way: lost only if it fails. */
  private leftInFlight: CallRecord[] = []
  /** A call of the open journal left memory without being stored: the file stays for the next start. */
  private incomplete = false
  private timer: NodeJS.Timeout | null = null
  private failing = false
  private closed = false
  /** The journal open at the stop (`drop` removes its file), and its closing (after the append under way). */
  private stopped: { journal: SpillJournal; closed: Promise<string | null> } | null = null
  /** File work under way (an append, a close, a removal or rewrite): a stop waits for it (`idle`). */
  private work = new Set<Promise<void>>()

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger | undefined,
    private readonly tickMs: number,
    /** Gives calls their keys (a call written to the database and kept in the journal is stored once). */
    private readonly giveKeys: (rows: readonly CallRecord[]) => void,
    /** The calls waiting for the database now. */
    private readonly waiting: () => readonly CallRecord[],
    /** The side rows waiting to be written with them. */
    private readonly waitingSide: () => readonly SideWrite[],
    /** Calls `left` counted on disk that the append holding them then failed to keep: lost after all. */
    private readonly lost: (n: number) => void,
    /** Calls `left` counted in the append under way that it has put on disk. */
    private readonly kept: (n: number) => void,
  ) {}

  /** Appends the waiting calls within a tick (recorded while the database cannot be written). */
  soon(): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.append()
    }, this.tickMs)
    this.timer.unref?.()
  }

  /** Appends the waiting calls and side rows not in the journal yet (the database refused a write). */
  append(): void {
    if (this.appending || this.closed) return
    const rows = this.waiting().filter((r) => !this.onDisk.has(r))
    const side = this.waitingSide().filter((w) => !this.onDisk.has(w))
    if (rows.length === 0 && side.length === 0) return
    this.giveKeys(rows)
    this.journal ??= new SpillJournal(this.dataDir)
    const j = this.journal
    this.appendingRows = new WeakSet(rows)
    const appending = j
      .append(rows, side)
      .then(
        () => {
          for (const r of rows) this.onDisk.add(r)
          for (const w of side) this.onDisk.add(w)
          if (this.leftInFlight.length > 0) this.kept(this.leftInFlight.length)
          if (this.failing) this.log?.info(`calls waiting for the database are kept in ${j.file} again`)
          this.failing = false
        },
        (err) => {
          // The rows whole in the file are on disk (side rows first); the others are tried again at the next tick.
          const cut = err instanceof SpillCut ? err : null
          for (const r of rows.slice(0, cut?.kept ?? 0)) this.onDisk.add(r)
          for (const w of side.slice(0, cut?.keptSide ?? 0)) this.onDisk.add(w)
          const lost = this.leftInFlight.filter((r) => !this.onDisk.has(r)).length
          if (this.leftInFlight.length > lost) this.kept(this.leftInFlight.length - lost)
          if (lost > 0) this.lost(lost)
          if (!this.failing) this.log?.error(`the database cannot be written and the calls waiting for it cannot be kept on disk either (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); they are held in memory`)
          this.failing = true
          this.soon()
        },
      )
      .finally(() => {
        this.appending = null
        this.appendingRows = new WeakSet()
        this.leftInFlight = []
        this.settle()
        // Calls recorded while this append was under way go at the next tick.
        if (this.journal && (this.waiting().some((r) => !this.onDisk.has(r)) || this.waitingSide().some((w) => !this.onDisk.has(w)))) this.soon()
      })
    this.appending = appending
    this.track(appending)
  }

  /** Keeps `p` among the file work a stop waits for. */
  private track(p: Promise<unknown>): void {
    const done: Promise<void> = p
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        this.work.delete(done)
      })
    this.work.add(done)
  }

  /**
   * Resolves once no file work of the journal is under way (an append opening or writing its file,
   * its close, the removal or rewrite of its file): a clean stop waits for it, so the data folder
   * holds, when it returns, exactly what the next start reads.
   */
  async idle(): Promise<void> {
    while (this.work.size > 0) await Promise.all([...this.work])
  }

  /** Whether `row` (a call or a side row) is on disk in the journal (a stop whose own spill file is cut keeps it in this one). */
  has(row: CallRecord | SideWrite): boolean {
    return this.onDisk.has(row)
  }

  /** The journal's file (open, or kept at the stop). */
  get file(): string | null {
    return (this.journal ?? this.stopped?.journal)?.file ?? null
  }

  /**
   * Calls that left memory unstored (past `ledger.max_pending`): those in the journal (or in the
   * append under way: when it ends, `kept` or `lost` is told) keep it for the next start. Returns
   * how many are on disk so, and so not lost (`kept`), and of those how many are in the append
   * under way (`inFlight`).
   */
  left(rows: readonly CallRecord[]): { kept: number; inFlight: number } {
    if (!this.journal) return { kept: 0, inFlight: 0 }
    let kept = 0
    let inFlight = 0
    for (const r of rows) {
      if (this.onDisk.has(r)) kept++
      else if (this.appending && this.appendingRows.has(r)) {
        kept++
        inFlight++
        this.leftInFlight.push(r)
      }
    }
    if (kept > 0) this.incomplete = true
    return { kept, inFlight }
  }

  /** The database took a batch: once nothing of the journal waits, the file goes. */
  settle(): void {
    const j = this.journal
    if (!j || this.appending || this.closed) return
    if (this.waiting().some((r) => this.onDisk.has(r)) || this.waitingSide().some((w) => this.onDisk.has(w))) return
    this.journal = null
    this.onDisk = new WeakSet()
    const keep = this.incomplete
    this.incomplete = false
    this.track(j.close().then((file) => this.finish(file, keep)))
  }

  /** A closed journal whose rows are all stored: removed, or, if some of its calls are there only, kept with its calls alone. */
  private async finish(file: string | null, keep: boolean): Promise<void> {
    if (!file) return
    if (keep) {
      // Its side rows are all stored now: replayed at the next start after what followed them
      // (a hold let go since), one would hold again. Its calls stay (stored once each, by key).
      try {
        rewriteSpill(file, readSpilled(file).rows)
      } catch {
        // Left whole: a hold held again ends at its bound.
      }
      this.log?.warn(`some calls kept in ${file} left memory before the database could take them: they are stored at the next start`)
      return
    }
    await rm(file, { force: true }).catch(() => {})
  }

  /**
   * A stop kept every waiting call in a spill file of its own (synchronously: an exit may follow at
   * once): the journal's file goes unless some of its calls are in it only; no more is appended.
   */
  drop(): void {
    this.close()
    const s = this.stopped
    this.stopped = null
    if (!s || this.incomplete) return
    const j = s.journal
    // Made by an append still under way (its file opened after this): removed once it is (`idle` waits).
    if (!j.file) {
      this.track(s.closed.then((file) => (file ? rm(file, { force: true }) : undefined)))
      return
    }
    try {
      rmSync(j.file, { force: true })
    } catch {
      // Left: its calls carry their keys, and the next start stores each once.
    }
  }

  /**
   * The last flush at the stop stored every waiting call and side row: the journal's file goes
   * (once the append under way has ended: `idle` waits), or keeps its calls alone when some of them
   * left memory.
   */
  stored(): void {
    const s = this.stopped
    this.stopped = null
    if (!s) return
    const keep = this.incomplete
    this.incomplete = false
    this.track(s.closed.then((file) => this.finish(file, keep)))
  }

  /** The ledger stops: no more appends; the file stays (its calls are stored at the next start). */
  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    const j = this.journal
    this.journal = null
    if (!j) return
    const closed = (this.appending ?? Promise.resolve()).then(() => j.close())
    this.stopped = { journal: j, closed }
    this.track(closed)
  }
}
