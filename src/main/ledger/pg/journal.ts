import { type FileHandle, open } from 'node:fs/promises'
import type { CallRecord } from '../record'
import type { SideWrite } from '../side-writes'
import { SpillCut, spillFile, wholeLines } from '../../reliability/spill'

/**
 * Most bytes one write is given: a large append (thousands of calls queued while PostgreSQL is
 * away) goes in steps, so a stop sees bytes reach the file on a slow disk (`onWritten`).
 */
const WRITE_CHUNK = 64 * 1024

/**
 * This instance's spill file while PostgreSQL is away: calls are appended as they are recorded
 * (one write per flush tick, off the hot path), in the spill format of reliability/spill.ts, so
 * a process killed outright still leaves them on disk for its next start. Appends run one at a
 * time, in order, whoever calls them: each waits for the one before it to end (two under way at
 * once wrote at the same offset, the second's lines over the first's). Not synced per append: a
 * killed process loses nothing the OS already has.
 */
export class SpillJournal {
  private handle: FileHandle | null = null
  private opening: Promise<FileHandle> | null = null
  private path: string | null = null
  /** Bytes of whole lines in the file: each append writes there. */
  private size = 0
  /** The last append asked for (settled or not): the next one starts after it. */
  private tail: Promise<void> = Promise.resolve()

  /** `onWritten` is told of the bytes each write puts in the file. */
  constructor(
    private readonly dataDir: string,
    private readonly onWritten: (bytes: number) => void = () => {},
  ) {}

  /** The file, once the first append has created it. */
  get file(): string | null {
    return this.path
  }

  private async fh(): Promise<FileHandle> {
    if (this.handle) return this.handle
    this.opening ??= (async () => {
      // A new file each time ('wx'): a name taken in the same millisecond moves to the next one.
      for (let now = Date.now(); ; now++) {
        const file = spillFile(this.dataDir, now)
        try {
          const h = await open(file, 'wx', 0o600)
          this.path = file
          this.handle = h
          // A new file: appends start at its first byte, not at the size of one closed before.
          this.size = 0
          return h
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
        }
      }
    })().finally(() => {
      this.opening = null
    })
    return this.opening
  }

  /**
   * Appends `rows`, after `side` (the rows the SQLite ledger writes with its calls: ../side-writes.ts);
   * resolves once the OS has them all. A write to a nearly full disk may take only
   * part of what it is given without an error: every byte is written, or the file is cut back to
   * its whole lines (a torn one would swallow the next append's first call) and a SpillCut says
   * how many of `rows` (and of `side`: `keptSide`) it holds.
   */
  append(rows: readonly CallRecord[], side: readonly SideWrite[] = []): Promise<void> {
    if (rows.length === 0 && side.length === 0) return Promise.resolve()
    const turn = this.tail.then(() => this.write(rows, side))
    this.tail = turn.catch(() => {})
    return turn
  }

  private async write(rows: readonly CallRecord[], side: readonly SideWrite[]): Promise<void> {
    const h = await this.fh()
    const buf = Buffer.from(lines(rows, side), 'utf8')
    let off = 0
    try {
      while (off < buf.length) {
        const { bytesWritten } = await h.write(buf, off, Math.min(WRITE_CHUNK, buf.length - off), this.size + off)
        if (bytesWritten === 0) throw Object.assign(new Error('no byte written'), { code: 'ENOSPC' })
        off += bytesWritten
        this.onWritten(bytesWritten)
      }
    } catch (err) {
      const whole = off > 0 ? buf.lastIndexOf(10, off - 1) + 1 : 0
      await h.truncate(this.size + whole).catch(() => {})
      this.size += whole
      const n = wholeLines(buf, whole)
      throw new SpillCut(this.path!, Math.max(0, n - side.length), err, Math.min(n, side.length))
    }
    this.size += buf.length
  }

  get open(): boolean {
    return this.handle !== null
  }

  /** Syncs and closes the file (it stays on disk), after the appends already asked for; returns its path. */
  async close(): Promise<string | null> {
    await this.tail
    const h = this.handle
    this.handle = null
    if (h) {
      await h.sync().catch(() => {})
      await h.close().catch(() => {})
    }
    return this.path
  }
}

function lines(rows: readonly CallRecord[], side: readonly SideWrite[]): string {
  return side.map((w) => JSON.stringify({ side: w })).concat(rows.map((r) => JSON.stringify(r))).join('\n') + '\n'
}
