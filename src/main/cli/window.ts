import { CliError, EXIT } from './context'
import { parseWhen } from '../report/report'
import { windowProblem } from '../report/window'

/**
 * `--since` and `--until` of `report` and `export` as instants in `tz` (null when not given),
 * checked before anything is read, through a server or from the ledger file alike: each a day or
 * an ISO time, and `--until` after `--since` (../report/window.ts, as the API checks them); else
 * exit code 2. A window with the two swapped printed an empty report or export from the file.
 */
export function cliWindow(o: { since?: string; until?: string }, tz: string): { since: number | null; until: number | null } {
  const at = { since: null as number | null, until: null as number | null }
  for (const name of ['since', 'until'] as const) {
    const v = o[name]
    if (v === undefined) continue
    at[name] = parseWhen(v, tz, name === 'until')
    if (at[name] === null) {
      throw new CliError(`--${name} must be a day of the calendar (2026-11-20) or an ISO time; got ${JSON.stringify(v)}`, EXIT.usage)
    }
  }
  const problem = windowProblem(at.since, at.until, o, (p) => `--${p}`)
  if (problem) throw new CliError(problem.message, EXIT.usage)
  return at
}
