import { WEEKDAYS, weekStartDay } from '../config/schema'
import type { Logger } from '../log'
import { SharedTable } from '../storage/shared-table'
import type { SqlStore } from '../storage/sql'
import { isValidTimeZone, type PeriodClock } from '../time/zone'
import type { PeriodsConfig } from './clock'

/** The budget clock as PostgreSQL's `budget_clock` holds it: an IANA zone and the first day of a week. */
export interface ClockSetting {
  timezone: string
  week_start: (typeof WEEKDAYS)[number]
}

const show = (c: ClockSetting) => `${c.timezone}, weeks from ${c.week_start}`

type ClockRow = { timezone: string | null; week_start: string | null }

/** The row's clock; null while no instance has set one. */
function settingOf(row: ClockRow | undefined): ClockSetting | null {
  return row?.timezone && row.week_start ? { timezone: row.timezone, week_start: row.week_start as ClockSetting['week_start'] } : null
}

/**
 * The budget clock every instance on one PostgreSQL counts budget periods in (`budget_clock`, one
 * row, versioned in itself; see SharedTable). A daily limit is one spend row per day, so two
 * instances whose days began at different instants would each fill a row of their own and admit
 * up to the limit twice over. The instance that starts last sets the clock from its config
 * (`timezone`, `budgets.week_start`), and the others follow it within about a second; one whose
 * config names no `timezone` sets it only while none is set.
 */
export class PgBudgetClock extends SharedTable<ClockSetting> {
  constructor(store: SqlStore, onChange: (rows: ClockSetting[]) => void) {
    super(store, 'budget_clock', onChange)
  }

  protected async read(): Promise<ClockSetting[]> {
    const s = settingOf(await this.store.get<ClockRow>('SELECT timezone, week_start FROM budget_clock WHERE one = 1'))
    return s ? [s] : []
  }

  /**
   * Sets the database's clock to `mine` (with `onlyIfUnset`, only while no instance has set one);
   * answers the one it held before (null: none yet).
   */
  claim(mine: ClockSetting, now = Date.now(), onlyIfUnset = false): Promise<ClockSetting | null> {
    return this.write(async (tx) => {
      const was = settingOf(await tx.get<ClockRow>('SELECT timezone, week_start FROM budget_clock WHERE one = 1 FOR UPDATE'))
      const same = (onlyIfUnset && was !== null) || (was?.timezone === mine.timezone && was.week_start === mine.week_start)
      if (!same) {
        await tx.run('UPDATE budget_clock SET timezone = @tz, week_start = @ws, set_at = @now WHERE one = 1', { tz: mine.timezone, ws: mine.week_start, now })
      }
      return { result: was, changed: !same }
    })
  }
}

/**
 * Shares `clock` (this server's budget clock, ./clock.ts) with every instance on the database:
 * sets the database's clock from this config as soon as PostgreSQL answers, then follows it.
 * `moved` runs after the clock moved (the meters are rebuilt in the new periods). Start-up never
 * waits on it: until the database answers, the config's clock is in force.
 */
export function shareBudgetClock(
  store: SqlStore,
  config: PeriodsConfig,
  clock: PeriodClock,
  log: Logger,
  moved: () => void,
): { close(): void } {
  const mine: ClockSetting = { timezone: config.timezone, week_start: config.budgets.week_start }
  const differs = (c: ClockSetting) => c.timezone !== mine.timezone || c.week_start !== mine.week_start
  const table = new PgBudgetClock(store, (rows) => {
    const s = rows[0]
    if (!s) return
    if (!isValidTimeZone(s.timezone) || !WEEKDAYS.includes(s.week_start)) {
      log.warn(`budgets: the database's budget clock (${show(s)}) is not one this instance knows; it keeps counting in ${show(mine)}`)
      return
    }
    if (!clock.set(s.timezone, weekStartDay(s.week_start))) return
    if (differs(s)) {
      log.warn(
        `budgets: another instance on this database set the budget clock to ${show(s)}; this instance counts budget days, weeks and months in it, not in its config's ${show(mine)}`,
      )
    } else {
      log.info(`budgets: the budget clock is this instance's config again (${show(s)})`)
    }
    moved()
  })
  // A config that names no zone (the machine's own, say a laptop joining the team's database)
  // sets the clock only while none is set: it follows the team's instead of moving it.
  const onlyIfUnset = config.timezone_from === 'machine'
  let closed = false
  void (async () => {
    while (!closed) {
      try {
        const was = await table.claim(mine, Date.now(), onlyIfUnset)
        if (was && differs(was) && !onlyIfUnset) {
          log.warn(`budgets: this database's budget clock was ${show(was)}; this instance's config sets it to ${show(mine)} for every instance on it`)
        }
        break
      } catch {
        await new Promise((r) => setTimeout(r, 1000).unref())
      }
    }
    if (!closed) table.start()
  })()
  return {
    close() {
      closed = true
      table.close()
    },
  }
}
