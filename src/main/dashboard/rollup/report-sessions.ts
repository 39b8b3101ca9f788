import type Database from 'better-sqlite3'
import { hasTable } from './report'

/**
 * The report rollup's session totals (`dash_report_session`): per session of each tenant
 * (`across` 0), and per session across tenants (`across` 1, `tenant` ''), the times of its first
 * and last call and what it cost. They let a session report over a long window find its costliest
 * sessions without summing every session of the window: a session whose calls all lie in the
 * window (`first_ts >= since`, `last_ts < until`) cost there exactly its total, so the costliest of
 * those come straight from an index; the few sessions that cross an end of the window are summed
 * for that window from the day and month rows (see src/main/report/sessions.ts).
 * `cost_usd` only ranks sessions: a report's figures are always summed from the day and month
 * rows. `first_ts`/`last_ts` may be wider than the calls (never narrower): migration 14 bounds a
 * session it cannot see the calls of by its days.
 */
export const SESSION_TABLE = `
  CREATE TABLE dash_report_session (
    across INTEGER NOT NULL,
    tenant TEXT NOT NULL,
    session TEXT NOT NULL,
    first_ts INTEGER NOT NULL,
    last_ts INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    PRIMARY KEY (across, tenant, session)
  ) WITHOUT ROWID;
  CREATE INDEX dash_report_session_cost ON dash_report_session (across, tenant, cost_usd, first_ts, last_ts);
  CREATE INDEX dash_report_session_last ON dash_report_session (across, tenant, last_ts, first_ts);
  CREATE INDEX dash_report_day_session ON dash_report_day (key, day) WHERE dim = 'session';
  CREATE INDEX dash_report_month_session ON dash_report_month (key, month) WHERE dim = 'session';`

/** Each session-totals row a call is summed into: its tenant's, and the one across tenants. */
export function eachSessionRow(c: { tenant: string; session: string }, visit: (across: 0 | 1, tenant: string) => void): void {
  visit(0, c.tenant)
  visit(1, '')
}

/** The upsert of one session-totals row (by the batch folder). */
export const UPSERT_SESSION = `
  INSERT INTO dash_report_session (across, tenant, session, first_ts, last_ts, cost_usd) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (across, tenant, session) DO UPDATE SET
    first_ts = min(first_ts, excluded.first_ts), last_ts = max(last_ts, excluded.last_ts),
    cost_usd = cost_usd + excluded.cost_usd`

/** Whether the ledger has the session totals (schema 14 on). */
export function hasReportSessions(db: Database.Database): boolean {
  return hasTable(db, 'dash_report_session')
}

/** A local day is at most 25 hours in every zone; two days bound the calls of a day row in any zone. */
const TWO_DAYS = 2 * 86_400_000

/**
 * Migration 14: the session totals, filled from the report rollup's session day rows (every
 * call, those retention pruned too). A session's times are the dashboard rollup's (`dash_session`,
 * exact) when it counted the same calls; otherwise (the calls without a session, or a session
 * partly pruned before the dashboard rollup existed) its first day's start and two days after its
 * last day's, which hold its calls in any zone.
 */
export function createReportSessions(db: Database.Database, built: boolean): void {
  db.exec(SESSION_TABLE)
  if (!built) return
  db.exec(`
    INSERT INTO dash_report_session (across, tenant, session, first_ts, last_ts, cost_usd)
    SELECT 0, d.tenant, d.session,
           CASE WHEN s.n = d.n THEN s.f ELSE d.f END, CASE WHEN s.n = d.n THEN s.l ELSE d.l END, d.c
      FROM (SELECT tenant, key AS session, min(day) AS f, max(day) + ${TWO_DAYS - 1} AS l, sum(requests) AS n, total(cost_usd) AS c
              FROM dash_report_day WHERE dim = 'session' GROUP BY tenant, key) d
      LEFT JOIN (SELECT tenant, session, min(first_ts) AS f, max(last_ts) AS l, sum(requests) AS n
                   FROM dash_session GROUP BY tenant, session) s
        ON s.tenant = d.tenant AND s.session = d.session;
    INSERT INTO dash_report_session (across, tenant, session, first_ts, last_ts, cost_usd)
    SELECT 1, '', session, min(first_ts), max(last_ts), total(cost_usd)
      FROM dash_report_session WHERE across = 0 GROUP BY session;`)
}
