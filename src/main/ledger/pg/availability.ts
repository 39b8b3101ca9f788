import type { Logger } from '../../log'
import type { LedgerStatus } from '../types'
import { NewerSchemaError } from '../../storage/postgres-migrations'
import { describeError, type PgStorageStatus } from './options'

/**
 * Whether PostgreSQL answers, as the writer last found it: `away` after a failed (or stalled)
 * write, with the next attempt backed off from 100 ms up to 5 s; back when a write or the
 * migration succeeds. Keeps the status `/api/health` shows.
 */
export class Availability {
  away = false
  /** No attempt before this time (ms). */
  retryAt = 0
  private retryMs = 0

  constructor(
    private readonly status: LedgerStatus,
    private readonly storage: PgStorageStatus,
    private readonly log: Logger,
    private readonly secret: string | undefined,
  ) {}

  /** PostgreSQL answered: the error that made it away goes (a row it refused is the writer's to say). */
  reached(): void {
    this.storage.reachable = true
    this.storage.last_error = null
    if (this.away) {
      this.log.info('PostgreSQL answers again; writing the calls held meanwhile')
      this.status.last_error = null
    }
    this.away = false
    this.status.writable = true
    this.retryMs = 0
    this.retryAt = 0
  }

  /**
   * PostgreSQL is away: a write failed (`failed`: the next attempt backs off) or has not answered
   * for too long. A database a newer Burnrate has upgraded answers (`reachable` stays true) but is
   * not written: said once at error level, since only upgrading this Burnrate ends it.
   */
  markAway(err: unknown, failed: boolean): void {
    const text = describeError(err, this.secret)
    const newer = err instanceof NewerSchemaError
    if (newer && this.storage.last_error !== text) {
      this.log.error(`${text}: the calls are kept in this instance's spill files and written once it is upgraded`)
    }
    if (failed) {
      this.storage.reachable = newer
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
      this.retryAt = Date.now() + this.retryMs
    }
    this.storage.last_error = text
    this.status.last_error = text
    this.status.writable = false
    this.away = true
  }
}
