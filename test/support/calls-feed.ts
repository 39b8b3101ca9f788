import { budgetsOf } from '../../src/main/budgets'
import type { PgRuleStore } from '../../src/main/budgets/shared-rules'
import { until } from './pg-harness'
import type { TestServer } from './server'

/** A PostgreSQL-mode server's calls feed (`calls_feed` in /api/health), read in process. */
export interface CallsFeed {
  listening: boolean
  /** Calls heard from other instances (their notifications). */
  heard: number
  /** Reads of the meters from PostgreSQL. */
  reads: number
}

export function callsFeed(t: TestServer): CallsFeed {
  return (t.server.context.healthSections.calls_feed as () => CallsFeed)()
}

/** Waits until `t` listens for other instances' calls and has read the meters from PostgreSQL once. */
export function untilMetersRead(t: TestServer): Promise<void> {
  return until('the meters read from PostgreSQL', () => callsFeed(t).listening && callsFeed(t).reads >= 1)
}

/**
 * Waits until every read of the meters `t`'s start-up makes is done: its first (`untilMetersRead`)
 * and the one the shared rules' first load asks for, which may still be under way after it. A
 * test that then sets the faked clock (test/support/fake-date.ts) or makes calls sees them land
 * on meters no start-up read replaces any more.
 */
export async function untilStartReadsDone(t: TestServer): Promise<void> {
  await untilMetersRead(t)
  const b = budgetsOf(t.server.context)
  await (b.store as PgRuleStore).refresh()
  await b.feed!.reload()
}
