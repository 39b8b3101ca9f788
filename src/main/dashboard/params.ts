import type { Request } from 'express'
import { GROUP_BYS, RANGES, type GroupBy, type Range } from '../../shared/api'
import { parseWhen, RANKED_KINDS, REPORT_KINDS, REPORT_LIMIT, type ReportKind } from '../report/report'
import { windowProblem } from '../report/window'

/** A known query parameter with a bad value: answered 400 `invalid_request` naming it. */
export class ParamError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * A parameter's one value; given twice, a 400 that names it (and, for a choice, what it accepts).
 * A NUL byte (`%00`) is a 400 too: a name Burnrate records from an HTTP header never holds one (PostgreSQL's text cannot),
 * and a query sending one to PostgreSQL failed as a 500.
 */
function one(req: Request, name: string, accepted?: readonly string[]): string | undefined {
  const v = req.query[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string') {
    throw new ParamError(name, `The parameter ${name} was given more than once; give it once${accepted ? `, one of ${accepted.join(', ')}` : ''}.`)
  }
  if (v.includes('\u0000')) throw new ParamError(name, `The parameter ${name} holds a NUL character (%00), which no parameter may.`)
  return v
}

function choice<T extends string>(req: Request, name: string, accepted: readonly T[], fallback: T): T {
  const v = one(req, name, accepted)
  if (v === undefined) return fallback
  if ((accepted as readonly string[]).includes(v)) return v as T
  throw new ParamError(
    name,
    `The parameter ${name} must be one of ${accepted.join(', ')}; got ${JSON.stringify(v)}.`,
  )
}

export function rangeParam(req: Request, fallback: Range): Range {
  return choice(req, 'range', RANGES, fallback)
}

export function groupByParam(req: Request): GroupBy {
  return choice(req, 'group_by', GROUP_BYS, 'model')
}

export function formatParam(req: Request): 'csv' | 'json' {
  return choice(req, 'format', ['csv', 'json'] as const, 'json')
}

/** `tenant=<id>` restricts to that tenant; absent or empty means every tenant. */
export function tenantParam(req: Request): string | null {
  const v = one(req, 'tenant')
  return v === undefined || v === '' ? null : v
}

/** `member=<name>` (team server) restricts to that member's calls; absent or empty means every call. */
export function memberParam(req: Request): string | null {
  const v = one(req, 'member')
  return v === undefined || v === '' ? null : v
}

/** `v` as a whole number from `min` to `max` (digits only), else null. The CLI's `--limit` reads it the same way. */
export function wholeNumber(v: string, min: number, max: number): number | null {
  const n = /^\d{1,7}$/.test(v) ? Number(v) : NaN
  return n >= min && n <= max ? n : null
}

export function limitParam(req: Request, min: number, max: number, fallback: number): number {
  const v = one(req, 'limit')
  if (v === undefined) return fallback
  const n = wholeNumber(v, min, max)
  if (n === null) {
    throw new ParamError('limit', `The parameter limit must be a whole number from ${min} to ${max}; got ${JSON.stringify(v)}.`)
  }
  return n
}

export function reportKindParam(req: Request): ReportKind {
  return choice(req, 'kind', REPORT_KINDS, 'daily')
}

/**
 * `limit` of a session, model, agent or project report: its costliest rows (default 100). A
 * daily, weekly or monthly report lists every period of its window, so `limit` there is refused.
 */
export function reportLimitParam(req: Request, kind: ReportKind): number | null {
  if (!RANKED_KINDS.includes(kind)) {
    if (one(req, 'limit') === undefined) return null
    throw new ParamError('limit', `The parameter limit applies to the ${RANKED_KINDS.join(', ')} reports; a ${kind} report lists every period of its window (narrow it with since and until).`)
  }
  return limitParam(req, 1, REPORT_LIMIT.max, REPORT_LIMIT.default)
}

/** `since`/`until`: a day `YYYY-MM-DD` in the configured zone or an ISO time; `until`'s day is included. */
export function whenParam(req: Request, name: 'since' | 'until', tz: string): number | null {
  const v = one(req, name)
  if (v === undefined || v === '') return null
  const t = parseWhen(v, tz, name === 'until')
  if (t === null) throw new ParamError(name, `The parameter ${name} must be a day of the calendar (2026-11-20) or an ISO time; got ${JSON.stringify(v)}.`)
  return t
}

/** The text of a parameter as given, after its reader accepted it (absent or empty: null). */
export function given(req: Request, name: string): string | null {
  const v = one(req, name)
  return v === undefined || v === '' ? null : v
}

/**
 * `since` and `until` of a report or export: each read by `whenParam`, and `until` after `since`
 * (../report/window.ts, as the CLI checks them). A window ending where or before it begins (the
 * two swapped) is a 400 naming `until`: it was answered with no rows, "no spend" for a window that had some.
 */
export function windowParams(req: Request, tz: string): { since: number | null; until: number | null } {
  const since = whenParam(req, 'since', tz)
  const until = whenParam(req, 'until', tz)
  const problem = windowProblem(since, until, { since: one(req, 'since'), until: one(req, 'until') }, (p, leading) => (leading ? `The parameter ${p}` : p))
  if (problem) throw new ParamError(problem.param, `${problem.message}.`)
  return { since, until }
}
