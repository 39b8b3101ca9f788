import { CALL_FIELDS, type Call, type CallBilling, type CallSource } from '../../shared/api'

/** The columns of `calls` a `Call` is made of. */
export const CALL_COLUMNS = `id, ts, provider, model, api_key_hash, tenant, agent, session, status, streamed,
  input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, priced,
  estimated, latency_ms, response_id, source, billing, project, member`

export interface CallRow {
  id: number
  ts: number
  provider: string
  model: string
  api_key_hash: string
  tenant: string
  agent: string
  session: string
  status: number
  streamed: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  reasoning_tokens: number
  cost_usd: number
  priced: number
  estimated: number
  latency_ms: number
  response_id: string
  source: CallSource
  billing: CallBilling
  project: string
  member: string
}

export function toCall(r: CallRow): Call {
  return {
    id: r.id,
    t: new Date(r.ts).toISOString(),
    provider: r.provider,
    model: r.model,
    api_key_hash: r.api_key_hash,
    tenant: r.tenant,
    agent: r.agent,
    session: r.session,
    status: r.status,
    streamed: r.streamed === 1,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    cache_read_tokens: r.cache_read_tokens,
    cache_write_tokens: r.cache_write_tokens,
    reasoning_tokens: r.reasoning_tokens,
    cost_usd: r.cost_usd,
    priced: r.priced === 1,
    estimated: r.estimated === 1,
    latency_ms: r.latency_ms,
    response_id: r.response_id,
    source: r.source,
    billing: r.billing,
    project: r.project,
    member: r.member,
  }
}

/** A quote, a line break or a separator any spreadsheet may split on (comma, semicolon, tab). */
const NEEDS_QUOTES = /[",;\t\r\n]/
/** Leading characters that make a spreadsheet read a cell as a formula (OWASP's list). */
const FORMULA_START = /^[=+\-@\t\r]/
/** A separator followed by such a character: where a spreadsheet splitting on it would start a formula cell. */
const FORMULA_AFTER_SEPARATOR = /([,;\t])(?=[=+\-@])/g
/** Any of the above: most cells have none and are written as they are. */
const SPECIAL = /^[=+\-@\t\r]|[",;\t\r\n]/

/**
 * The ASCII characters csvText takes care of, as tables by character code (1: cares): `anywhere`
 * in a cell (those it quotes for), and `first` (those, and the formula starts). A text of ASCII
 * characters none of which is marked (its first by `first`) is its own cell (the export's bytes).
 */
export function csvSpecialAscii(): { anywhere: Uint8Array; first: Uint8Array } {
  const anywhere = new Uint8Array(128)
  const first = new Uint8Array(128)
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c)
    // SPECIAL is the test csvText returns a text as it is by: after a plain first character, and first.
    anywhere[c] = SPECIAL.test('a' + ch) ? 1 : 0
    first[c] = SPECIAL.test(ch) ? 1 : 0
  }
  return { anywhere, first }
}

/**
 * One CSV cell (RFC 4180): quoted when it holds a quote, a line break or a separator (`,`, and
 * `;` or tab, which spreadsheets in many locales split on), quotes doubled. Text that a
 * spreadsheet would run as a formula gets a `'` in front (OWASP's CSV-injection advice): at the
 * start of the cell (`=`, `+`, `-`, `@`, tab, CR first), and after a separator inside it
 * (`;=1+1` becomes `";'=1+1"`), since a spreadsheet that splits on `;` and ignores the quotes
 * would otherwise start a formula cell there. Numbers and booleans are written as they are.
 */
export function csvText(v: string): string {
  if (!SPECIAL.test(v)) return v
  let s = FORMULA_START.test(v) ? "'" + v : v
  if (NEEDS_QUOTES.test(s)) s = '"' + s.replace(FORMULA_AFTER_SEPARATOR, "$1'").replace(/"/g, '""') + '"'
  return s
}

export const CSV_HEADER = CALL_FIELDS.join(',') + '\r\n'

/** A call as one CSV line (CRLF-terminated), fields in `CALL_FIELDS` order. */
export function csvLine(r: CallRow): string {
  return (
    r.id + ',' +
    new Date(r.ts).toISOString() + ',' +
    csvText(r.provider) + ',' +
    csvText(r.model) + ',' +
    csvText(r.api_key_hash) + ',' +
    csvText(r.tenant) + ',' +
    csvText(r.agent) + ',' +
    csvText(r.session) + ',' +
    r.status + ',' +
    (r.streamed === 1) + ',' +
    r.input_tokens + ',' +
    r.output_tokens + ',' +
    r.cache_read_tokens + ',' +
    r.cache_write_tokens + ',' +
    r.reasoning_tokens + ',' +
    r.cost_usd + ',' +
    (r.priced === 1) + ',' +
    (r.estimated === 1) + ',' +
    r.latency_ms + ',' +
    csvText(r.response_id) + ',' +
    csvText(r.source) + ',' +
    csvText(r.billing) + ',' +
    csvText(r.project) + ',' +
    csvText(r.member) + '\r\n'
  )
}

/** `new Date(ts).toISOString()`, with the date and hour formatted once per hour (calls come in time order). */
export class IsoTimes {
  private hour = NaN
  private prefix = ''

  of(ts: number): string {
    // Outside years 0000-9999, or not a whole ms: the Date's own formatting.
    if (!Number.isInteger(ts) || ts < 0 || ts >= 253_402_300_800_000) return new Date(ts).toISOString()
    const h = Math.floor(ts / 3_600_000)
    if (h !== this.hour) {
      this.hour = h
      this.prefix = new Date(h * 3_600_000).toISOString().slice(0, 14)
    }
    const r = ts - h * 3_600_000
    const m = Math.floor(r / 60_000)
    const sec = Math.floor((r % 60_000) / 1000)
    const ms = r % 1000
    return this.prefix + (m < 10 ? '0' : '') + m + ':' + (sec < 10 ? '0' : '') + sec + '.' + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z'
  }
}
