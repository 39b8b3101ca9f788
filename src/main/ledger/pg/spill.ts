import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import type { Logger } from '../../log'
import { SpillCut, rewriteSpill, spillFiles } from '../../reliability/spill'
import { type SpillEntry, spilledEntries } from '../../reliability/spill-file'
import type { SideWrite } from '../side-writes'
import { untrustedIfThere } from '../../security/owned-file'
import { keysFromFile } from '../call-keys'
import type { CallRecord } from '../record'
import type { LedgerStatus } from '../types'
import { SpillJournal } from './journal'
import { describeError, type PgStorageStatus } from './options'
import type { Entry, PendingQueue } from './queue'

export interface SpillOptions {
  dataDir: string
  log: Logger
  secret: string | undefined
  batchRows: number
  /** Writes one batch to PostgreSQL (throws when it is away). */
  writeRows: (rows: CallRecord[]) => Promise<void>
  /** PostgreSQL is away as the writer last found it. */
  away: () => boolean
  /** The ledger is stopping: no more appends from the tick. */
  closed: () => boolean
}

/**
 * The ledger's spill files. While PostgreSQL is away (or slow: calls waiting past
 * JOURNAL_AFTER_MS) the queue is appended to this instance's journal every tick, so a killed
 * process leaves its calls on disk. When PostgreSQL answers again
 * the journal is removed once everything in it is stored (or, if calls had to leave memory, read
 * back and written first: the backlog). Spill files found at start-up (a killed or stopped
 * instance's: `earlier`) are written before the spend is read, so each call counts once, and
 * then removed. Keeps `storage.spilled` and `storage.spill_files`.
 */
export class Spill {
  /** Spill files found at start-up: written before the spend is loaded. */
  private readonly earlier: string[]
  /** Own spill files whose calls must be read back (some had left memory). */
  private readonly backlog: string[] = []
  private journal: SpillJournal | null = null
  /** Highest sequence number in the journal. */
  private spilledThrough = 0
  /** A call of the journal left memory (past maxPending): the file is read back when PostgreSQL returns. */
  private journalIncomplete = false
  /** How many of the journal's calls left memory (counted in `left_on_disk` until the file is written back). */
  private journalLeft = 0
  /** Of the own files to read back, how many calls each holds that left memory (they leave `left_on_disk` once it is written). */
  private readonly leftIn = new Map<string, number>()
  private spilling: Promise<void> | null = null
  /** Highest sequence number of the append under way. */
  private spillingThrough = 0
  /** Calls that left memory while the append holding them was under way: lost only if it fails. */
  private leftInFlight: number[] = []
  /** The journal took calls while PostgreSQL was away (not only while it was slow). */
  private journalAway = false
  private spillFailing = false
  /**
   * Files whose calls are stored but which stay for their side rows (this instance's own SQLite
   * file was busy at start-up): counted in `spill_files` while they are there (the next start takes them).
   */
  private readonly sideOnly = new Set<string>()
  /** The keepRest under way (they run one after the other). */
  private keeping: Promise<void> = Promise.resolve()
  /** Bytes the journals have put in their files, ever. */
  private bytes = 0
  private readonly onWritten = (bytes: number): void => {
    this.bytes += bytes
  }

  constructor(
    private readonly queue: PendingQueue,
    private readonly status: LedgerStatus,
    private readonly storage: PgStorageStatus,
    private readonly opts: SpillOptions,
  ) {
    this.earlier = spillFiles(opts.dataDir).filter((file) => ownSpill(file, opts.log))
    this.countFiles()
  }

  /** A journal is open (its calls are removed from disk once all are stored). */
  get journaling(): boolean {
    return this.journal !== null
  }

  /** Queued calls in no spill file yet. */
  get notOnDisk(): number {
    return this.queue.after(this.spilledThrough).length
  }

  /** Bytes the journals have put in their files, ever: a stop waits while this grows (a slow disk that works). */
  get written(): number {
    return this.bytes
  }

  /** A journal is open or own files wait to be read back: work for the writer. */
  get hasWork(): boolean {
    return this.backlog.length > 0 || this.journal !== null
  }

  /**
   * Calls that left memory (past maxPending): those already in the journal make it incomplete
   * (it is read back later); returns how many were not on disk, and so are lost.
   */
  leftMemory(gone: Entry[]): number {
    // A call the append under way holds is on disk once it ends (if it fails, it counts then).
    const onDisk = this.spilling ? this.spillingThrough : this.spilledThrough
    const lost = gone.filter((e) => e.seq > onDisk).length
    let inFlight = 0
    for (const e of gone) {
      if (e.seq > this.spilledThrough && e.seq <= onDisk) {
        this.leftInFlight.push(e.seq)
        inFlight++
      }
    }
    const kept = gone.length - lost
    if (kept > 0) {
      this.journalIncomplete = true
      this.journalLeft += kept
      this.status.left_on_disk = (this.status.left_on_disk ?? 0) + kept
      // The total (a counter, never down) counts a call once it is on disk: those of the append
      // under way when it ends with them in the file.
      this.status.left_on_disk_total = (this.status.left_on_disk_total ?? 0) + kept - inFlight
    }
    return lost
  }

  /** Appends the calls not on disk yet to the journal (while PostgreSQL is away, or slow). */
  spill(): void {
    if (this.spilling || this.opts.closed()) return
    if (this.opts.away()) this.journalAway = true
    const rows = this.queue.after(this.spilledThrough)
    if (rows.length === 0) return
    const last = rows[rows.length - 1].seq
    this.journal ??= new SpillJournal(this.opts.dataDir, this.onWritten)
    const j = this.journal
    this.spillingThrough = last
    this.spilling = j
      .append(rows.map((e) => e.row))
      .then(
        () => {
          this.spilledThrough = last
          this.storage.spilled += rows.length
          this.status.left_on_disk_total = (this.status.left_on_disk_total ?? 0) + this.leftInFlight.length
          if (this.spillFailing) this.opts.log.info(`calls are being spilled to ${j.file} again`)
          this.spillFailing = false
          this.countFiles()
        },
        (err) => {
          // The calls whole in the file are on disk; the others are tried again at the next tick.
          const kept = err instanceof SpillCut ? err.kept : 0
          if (kept > 0) {
            this.spilledThrough = rows[kept - 1].seq
            this.storage.spilled += kept
            this.countFiles()
          }
          const lost = this.leftInFlight.filter((seq) => seq > this.spilledThrough).length
          this.status.left_on_disk_total = (this.status.left_on_disk_total ?? 0) + this.leftInFlight.length - lost
          if (lost > 0) {
            this.journalLeft = Math.max(0, this.journalLeft - lost)
            this.status.left_on_disk = Math.max(0, (this.status.left_on_disk ?? 0) - lost)
            this.status.dropped += lost
            this.status.overflowed = (this.status.overflowed ?? 0) + lost
          }
          if (!this.spillFailing) this.opts.log.error(`PostgreSQL is away and calls cannot be spilled to disk (${this.describe(err)}); they are held in memory`)
          this.spillFailing = true
        },
      )
      .finally(() => {
        this.spilling = null
        this.leftInFlight = []
      })
  }

  /** Writes the spill files earlier runs left (before the spend is loaded). */
  async writeEarlier(): Promise<void> {
    while (this.earlier.length > 0) await this.writeFile(this.earlier[0], this.earlier)
  }

  /** Everything of the journal is stored (or read back): the file goes. */
  async finishJournal(): Promise<void> {
    const j = this.journal
    const stored = () => this.queue.writtenThrough(this.spilledThrough)
    if (!j || !stored()) return
    await this.spilling
    if (this.journal !== j || this.opts.away() || this.spilling || !stored()) return
    this.journal = null
    const file = await j.close()
    if (!file) return
    if (this.journalIncomplete) {
      this.journalIncomplete = false
      this.leftIn.set(file, this.journalLeft)
      this.journalLeft = 0
      this.backlog.push(file)
    } else {
      await rm(file, { force: true })
      if (this.journalAway) this.opts.log.info(`PostgreSQL is back: the ${this.storage.spilled} call(s) spilled to ${file} are written`)
    }
    this.journalAway = false
    this.storage.spilled = 0
    this.countFiles()
  }

  /** Writes this instance's own files whose calls had left memory. */
  async writeBacklog(): Promise<void> {
    while (this.backlog.length > 0) await this.writeFile(this.backlog[0], this.backlog)
  }

  /**
   * The ledger stops: the calls still queued join the journal, which is closed (it stays for the
   * next start). `why` says why they were not written (PostgreSQL away, by default). One at a
   * time: two stops can overlap (a second signal's exit while the first stop's close keeps its
   * rest), and each reads the queue after the other's append has ended; together they wrote at
   * the same offset, the second's lines over the first's, tearing one.
   */
  keepRest(why?: string): Promise<void> {
    const turn = this.keeping.then(() => this.keepRestNow(why))
    this.keeping = turn.catch(() => {})
    return turn
  }

  private async keepRestNow(why?: string): Promise<void> {
    await this.spilling
    if (this.queue.length > 0) {
      const rows = this.queue.after(this.spilledThrough)
      try {
        this.journal ??= new SpillJournal(this.opts.dataDir, this.onWritten)
        await this.journal.append(rows.map((e) => e.row))
        this.spilledThrough = this.queue.lastSeq
        this.storage.spilled += rows.length
      } catch (err) {
        // A cut file holds its first calls whole: those are kept.
        const kept = err instanceof SpillCut ? err.kept : 0
        if (kept > 0) {
          this.spilledThrough = rows[kept - 1].seq
          this.storage.spilled += kept
        }
        this.status.dropped += rows.length - kept
        this.status.last_drop = `they could not be saved anywhere: ${this.describe(err)}`
        this.opts.log.error(`${rows.length - kept} call(s) could not be saved anywhere: ${this.describe(err)}`)
      }
    }
    // A keepRest after another (overlapping stops) that added nothing has nothing new to say.
    const open = this.journal?.open ?? false
    const file = await this.journal?.close()
    if (file && open && this.storage.spilled > 0) {
      // (While it answers, last_error can be a row it refused: not why these wait.)
      const away = this.opts.away() && this.status.last_error ? `PostgreSQL is away (${this.status.last_error})` : 'PostgreSQL did not take the last writes in time'
      this.opts.log.warn(`${why ?? away}; ${this.storage.spilled} call(s) kept in ${file} until the next start`)
    }
  }

  /**
   * Writes a spill file's calls (once: each has a key) and removes it. Read as it is written, a
   * batch at a time: a file past the longest string V8 makes (~512 MB, a long outage on a busy
   * team) could not be read whole, and stayed unread at every start. One still holding side rows
   * (budget holds, key patterns: ../../storage/spilled-side.ts writes them to this instance's own
   * SQLite file at start-up, and takes them out of the file once written) stays, with those only:
   * that file was busy, and the next start writes them. Removed, they were lost.
   */
  private async writeFile(file: string, list: string[]): Promise<void> {
    const side: SideWrite[] = []
    let rows = 0
    let batch: CallRecord[] = []
    const write = async () => {
      // A file from a SQLite ledger before its spill files carried keys has none: its name and line make stable ones.
      keysFromFile(file, batch, rows - batch.length)
      const out = batch
      batch = []
      await this.opts.writeRows(out)
    }
    const entries = spilledEntries(file)
    try {
      for (;;) {
        let next: IteratorResult<SpillEntry>
        try {
          next = await entries.next()
        } catch (err) {
          // Not PostgreSQL's problem: an unreadable file stays where it is for a person to look at.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.log.error(`cannot read the spill file ${file} (${this.describe(err)}); it stays there`)
          list.shift()
          this.countFiles()
          return
        }
        if (next.done) break
        if ('side' in next.value) side.push(next.value.side)
        else {
          batch.push(next.value.row)
          rows++
          if (batch.length >= this.opts.batchRows) await write()
        }
      }
    } finally {
      await entries.return(undefined)
    }
    if (batch.length > 0) await write()
    if (side.length === 0) await rm(file, { force: true })
    else {
      if (rows > 0) this.keepSide(file, side)
      this.sideOnly.add(file)
    }
    list.shift()
    this.countFiles()
    // Its calls that had left memory are stored now: no longer waiting on disk.
    const left = this.leftIn.get(file) ?? 0
    this.leftIn.delete(file)
    if (left > 0) this.status.left_on_disk = Math.max(0, (this.status.left_on_disk ?? 0) - left)
    if (rows > 0) this.opts.log.info(`wrote ${rows} call(s) kept in ${file} to PostgreSQL`)
  }

  /** The file's calls are stored; its side rows, not yet in this instance's own file, stay in it alone. */
  private keepSide(file: string, side: SideWrite[]): void {
    try {
      rewriteSpill(file, [], side)
    } catch {
      // Left whole: its calls are not stored twice at the next start (each has a key).
    }
    this.opts.log.warn(`the ${side.length} row(s) (budget holds, key patterns, thresholds announced) in ${file} are not written to this instance's own database file yet; they stay in it for the next start`)
  }

  private countFiles(): void {
    // (One a person has removed since is no longer counted.)
    for (const file of this.sideOnly) if (!existsSync(file)) this.sideOnly.delete(file)
    this.storage.spill_files = this.earlier.length + this.backlog.length + this.sideOnly.size + (this.journal?.open ? 1 : 0)
  }

  private describe(err: unknown): string {
    return describeError(err, this.opts.secret)
  }
}

/**
 * Whether a spill file found at start-up is Burnrate's own (this user's), as the SQLite ledger
 * asks (../../reliability/spill.ts): in a shared folder another user could plant forged calls,
 * which would go into every instance's totals and budgets. One that is not stays, with a warning.
 */
function ownSpill(file: string, log: Logger): boolean {
  // (Gone, or unreadable: reading it says so.)
  const untrusted = untrustedIfThere(file)
  if (untrusted) log.warn(`${file} is not read: ${untrusted}`)
  return untrusted === null
}
