/**
 * Amounts typed in a form, read as a person means them: plain decimal digits with at most one dot
 * (`5`, `0.50`, `.5`), a dollar amount with an optional leading `$` and thousands commas as the
 * dashboard shows them (`$1,250.75`). Number() alone also took `0x10` (16), `1e3` (1000), `0b11`,
 * `Infinity` and, trimmed to nothing, `' '` (0): a budget limit typed so was saved as another
 * amount, or as $0, which blocks every call.
 */

const PLAIN = /^(?:\d+(?:\.\d*)?|\.\d+)$/
const GROUPED = /^\d{1,3}(?:,\d{3})+(?:\.\d*)?$/

/** A dollar amount as typed, or null when the field is blank (no limit); throws, naming the field, on anything else. */
export function readUsd(typed: string, name: string): number | null {
  const s = typed.trim()
  if (s === '') return null
  const digits = s.startsWith('$') ? s.slice(1) : s
  const n = PLAIN.test(digits) || GROUPED.test(digits) ? Number(digits.replaceAll(',', '')) : NaN
  if (!Number.isFinite(n)) {
    throw new Error(`${name} must be a number of US dollars written in digits, such as 5, 0.50 or $1,250 (not ${JSON.stringify(s)}); leave it blank for no limit.`)
  }
  return n
}

/** A percentage as typed (`80`, `80%`, `12.5`), or null when blank; throws, naming the field, on anything else. */
export function readPercent(typed: string, name: string): number | null {
  const s = typed.trim()
  if (s === '') return null
  const digits = s.endsWith('%') ? s.slice(0, -1).trimEnd() : s
  const n = PLAIN.test(digits) ? Number(digits) : NaN
  if (!Number.isFinite(n)) throw new Error(`${name} must be a percentage written in digits, such as 80 or 80% (not ${JSON.stringify(s)}); leave it blank for none.`)
  return n
}
