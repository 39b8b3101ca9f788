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
