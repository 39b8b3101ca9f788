import { type Dirent, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, relative, sep } from 'node:path'
import { untrustedReason } from '../security/owned-file'
import { ConnectError } from './errors'
import { makeFolders, writeDurably } from './files'
import type { KeyPath } from './formats/types'

/** A key Burnrate set, with what was there before. */
export interface OwnedKey {
  key: string[]
  /** Whether the key existed before, and its value then. */
  had: boolean
  previous?: unknown
  wrote: unknown
  /** Parent objects Burnrate had to create for it (removed again when left empty). */
  created: string[][]
}

export interface FileRecord {
  path: string
  existed: boolean
  /** The backup of the file as it was before Burnrate first wrote it (a file in the backups folder). */
  backup: string | null
  /** SHA-256 of the text Burnrate wrote: equal on disconnect means nobody touched it since. */
  written_sha256: string
  /** A copy of the text Burnrate wrote (in the backups folder): the user's later edits are the diff from it. */
  written_copy: string | null
  /** Folders Burnrate made to write the file (outermost first): removed with it when left empty. */
  created_dirs?: string[]
  keys: OwnedKey[]
}

export interface ConnectionRecord {
  agent: string
  url: string
  connected_at: string
  files: FileRecord[]
}

/** One agent file a connect or disconnect under way changes (./recover.ts). */
export interface PendingFile {
  path: string
  /** A copy of the file's bytes before (a file in the backups folder); null: there was no file. */
  before: string | null
  before_sha256: string | null
  /** SHA-256 of the bytes being written; null: the file is being removed. */
  after_sha256: string | null
  /** Folders made for the file (outermost first). */
  folders?: string[]
}

/**
 * A connect or disconnect under way, saved before it changes any agent file: when it is cut off
 * (a crash, a power cut), the next one finishes it (every file written: `records` become the
 * records) or undoes it (each file written put back from its copy), ./recover.ts.
 */
export interface Pending {
  agent: string
  /** The process making it (with its start time where known, ../server/data-lock.ts): while it runs, the change is left to it. */
  pid: number
  proc_start?: string
  records: Record<string, ConnectionRecord>
  files: PendingFile[]
}

export const STATE_FILE = 'agent-connections.json'
export const BACKUP_DIR = 'agent-backups'

/** The connection records (`agent-connections.json`) and backups (`agent-backups/`) in Burnrate's data folder, private to the user. */
export class StateStore {
  constructor(private readonly dataDir: string) {}

  /**
   * The records. Only the user's own file is read (../security/owned-file.ts): in a data folder
   * other users may write, theirs could name any file and the values Disconnect "puts back" in
   * it (an agent's base URL pointed at their listener, and every API key sent there).
   */
  read(): Record<string, ConnectionRecord> {
    return this.load().connections ?? {}
  }

  /** The connect or disconnect that was cut off, or null. */
  pending(): Pending | null {
    return this.load().pending ?? null
  }

  /** The backups the last change saved its records to drop, which a crash may have left (./recover.ts). */
  dropping(): string[] {
    const drop = this.load().drop
    return Array.isArray(drop) ? drop.filter((n): n is string => typeof n === 'string') : []
  }

  private load(): { connections?: Record<string, ConnectionRecord>; pending?: Pending; drop?: unknown } {
    const file = join(this.dataDir, STATE_FILE)
    let text: string
    try {
      const untrusted = untrustedReason(file)
      if (untrusted) {
        throw new ConnectError('unreadable', `${file} (Burnrate's record of the agents it connected) is not read, ${untrusted}; nothing was written. Move it away, and keep Burnrate's data in a folder only you may write.`, file)
      }
      text = readFileSync(file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw err
    }
    let data: { version?: number; connections?: Record<string, ConnectionRecord>; pending?: Pending; drop?: unknown } | null
    try {
      data = JSON.parse(text)
    } catch (err) {
      throw new ConnectError(
        'malformed',
        `${file} (Burnrate's record of the agents it connected) is not valid JSON (${(err as Error).message}); nothing was written. Fix it, or move it away to start the records again (the agents' backups stay in ${join(this.dataDir, BACKUP_DIR)}).`,
        file,
      )
    }
    return data ?? {}
  }

  /**
   * Saves the records, with the connect or disconnect about to change agent files when there is
   * one, or the backups the records no longer name, about to be dropped (`drop`).
   */
  write(records: Record<string, ConnectionRecord>, pending?: Pending, drop?: string[]): void {
    const more = { ...(pending ? { pending } : {}), ...(drop?.length ? { drop } : {}) }
    this.writePrivate(join(this.dataDir, STATE_FILE), JSON.stringify({ version: 1, connections: records, ...more }, null, 2) + '\n')
  }

  /**
   * Saves a copy under a name of its own: two files of the same name (a settings.json in
   * $CLAUDE_CONFIG_DIR and the ~/.claude/settings.json a re-point puts back) copied in the same
   * millisecond would otherwise share one, the later copy taking the place of the earlier.
   */
  saveBackup(agent: string, path: string, text: string | Buffer, now: Date): string {
    const stem = `${agent}/${now.toISOString().replace(/[:.]/g, '-')}-${basename(path)}`
    let name = stem
    for (let n = 2; existsSync(join(this.dataDir, BACKUP_DIR, name)); n++) name = `${stem}-${n}`
    this.writePrivate(join(this.dataDir, BACKUP_DIR, name), text)
    return name
  }

  /** A backup's text; null when it is gone, or is not the user's own (another user's would be put back as the agent's config). */
  readBackup(name: string): string | null {
    const file = join(this.dataDir, BACKUP_DIR, name)
    try {
      return untrustedReason(file) ? null : readFileSync(file, 'utf8')
    } catch {
      return null
    }
  }

  /** A backup's bytes (a copy of a file as it was, ./recover.ts); null as readBackup. */
  readBackupBytes(name: string): Buffer | null {
    const file = join(this.dataDir, BACKUP_DIR, name)
    try {
      return untrustedReason(file) ? null : readFileSync(file)
    } catch {
      return null
    }
  }

  /**
   * Removes what a connect cut off before it saved its pending change left in the backups folder:
   * copies of the user's files (their API keys in them) that no record names, and temporary files,
   * made `since` (ms) or later: the crashed Burnrate's lock was made before them (./lock.ts). Older
   * ones stay: records moved away to start again leave their backups for the user to put back.
   * Only as the only Burnrate changing them, once a cut-off change is settled.
   */
  dropUnnamed(since: number): void {
    const pending = this.pending()
    const records = [...Object.values(this.read()), ...Object.values(pending?.records ?? {})]
    const keep = new Set<string>([...records.flatMap((r) => r.files.flatMap((f) => [f.backup, f.written_copy])), ...(pending?.files ?? []).map((f) => f.before)].filter((n): n is string => !!n))
    const root = join(this.dataDir, BACKUP_DIR)
    let found: Dirent[]
    try {
      // Not another user's folder, nor a link they made (to a folder of the user's, whose recent
      // files would all be taken for a crash's leftovers and deleted).
      if (untrustedReason(root) !== null) return
      found = readdirSync(root, { recursive: true, withFileTypes: true })
    } catch {
      return
    }
    const drop = (full: string): void => {
      try {
        if (statSync(full).mtimeMs >= since) rmSync(full, { force: true })
      } catch {
        // Left: it harms nothing more than before.
      }
    }
    for (const e of found) {
      const full = join(e.parentPath, e.name)
      if (e.isFile() && !keep.has(relative(root, full).split(sep).join('/'))) drop(full)
    }
    for (const e of readdirSync(this.dataDir, { withFileTypes: true })) {
      if (e.isFile() && e.name.startsWith(`${STATE_FILE}.burnrate-`) && e.name.endsWith('.tmp')) drop(join(this.dataDir, e.name))
    }
  }

  dropBackup(name: string): void {
    rmSync(join(this.dataDir, BACKUP_DIR, name), { force: true })
  }

  /** Durably (../files.ts writeDurably): a record is only saved once what it names is on the disk. */
  private writePrivate(path: string, text: string | Buffer): void {
    makeFolders(dirname(path))
    writeDurably(path, text, 0o600)
  }
}

export type { KeyPath }
