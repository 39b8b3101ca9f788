import { type Config, weekStartDay } from '../config/schema'
import { PeriodClock } from '../time/zone'

/** What a budget clock is made from: the config's `timezone` and `budgets.week_start`. */
export type PeriodsConfig = { timezone: string; timezone_from?: Config['timezone_from']; budgets: Pick<Config['budgets'], 'week_start'> }

const clocks = new WeakMap<PeriodsConfig, PeriodClock>()

/**
 * The one clock a server's budgets count periods in (days, weeks and months of every rule): the
 * engine's meters, the PostgreSQL spend rows its stored calls count in, and re-pricing's moves all
 * hold this same object. It starts as the config's `timezone` and `budgets.week_start`; on
 * PostgreSQL every instance follows the clock the database holds (./shared-clock.ts), which moves
 * it in place for all of them at once.
 */
export function budgetClockOf(config: PeriodsConfig): PeriodClock {
  let c = clocks.get(config)
  if (!c) {
    c = new PeriodClock(config.timezone, weekStartDay(config.budgets.week_start))
    clocks.set(config, c)
  }
  return c
}
