import { CALL_COLUMNS } from './columns'
import type { CallRecord } from './record'

/**
 * A batch of calls in the form they cross to the ledger's write thread: every number in one
 * Float64Array, every text as an index into the batch's distinct texts. Posting an array of
 * call objects makes the structured clone write (and the thread read back) every field name and
 * value of every row, about 6 µs a call on the event loop; this form costs a Map lookup per text
 * and a copy of two typed arrays. Numbers pass as the same doubles, texts as the same strings:
 * the thread writes exactly what the objects would have written.
 */
export interface PackedCalls {
  packed: true
  count: number
  /** NUMBER_FIELDS then FLAG_FIELDS (0/1) of each row in turn. */
  numbers: Float64Array
  /** TEXT_FIELDS of each row in turn: an index into `texts`, NULL_TEXT for null, ABSENT for a field left out. */
  refs: Uint32Array
  texts: string[]
  /**
   * Each row's `call_key` (../ledger/call-keys.ts), null for a row without one. Apart from
   * `texts`: every key is a different string, and would only grow the index Map.
   */
  keys: (string | null)[]
}

const NUMBER_FIELDS = [
  'ts', 'status', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'latency_ms',
] as const satisfies readonly (keyof CallRecord)[]
const FLAG_FIELDS = ['streamed', 'priced', 'estimated'] as const satisfies readonly (keyof CallRecord)[]
const TEXT_FIELDS = [
  'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'error', 'response_id',
  'source', 'billing', 'project', 'member', 'requested_model', 'usage_extra',
] as const satisfies readonly (keyof CallRecord)[]

const NUMS = NUMBER_FIELDS.length + FLAG_FIELDS.length
const TEXTS = TEXT_FIELDS.length
const NULL_TEXT = 0xffffffff
const ABSENT = 0xfffffffe
/** A value no text field may hold: the batch is posted as objects. */
const BAD = 0xfffffffd

/**
 * The batch packed, or null when a row holds something this form would not carry exactly (a
 * number field that is not a number, a text that is not a string): such a batch is posted as
 * objects, and the database refuses or takes it just as it would have.
 */
export function packCalls(rows: readonly CallRecord[]): PackedCalls | null {
  const n = rows.length
  const numbers = new Float64Array(n * NUMS)
  const refs = new Uint32Array(n * TEXT_FIELDS.length)
  const texts: string[] = []
  const index = new Map<string, number>()
  const keys: (string | null)[] = new Array(n)
  const ref = (v: unknown): number => {
    if (typeof v === 'string') {
      let k = index.get(v)
      if (k === undefined) {
        k = texts.length
        texts.push(v)
        index.set(v, k)
      }
      return k
    }
    if (v === null) return NULL_TEXT
    if (v === undefined) return ABSENT
    return BAD
  }
  let ni = 0
  let ti = 0
  for (let i = 0; i < n; i++) {
    const r = rows[i]
    if (
      typeof r.ts !== 'number' || typeof r.status !== 'number' || typeof r.input_tokens !== 'number' ||
      typeof r.output_tokens !== 'number' || typeof r.cache_read_tokens !== 'number' || typeof r.cache_write_tokens !== 'number' ||
      typeof r.cache_write_1h_tokens !== 'number' || typeof r.reasoning_tokens !== 'number' || typeof r.cost_usd !== 'number' ||
      typeof r.latency_ms !== 'number' || typeof r.streamed !== 'boolean' || typeof r.priced !== 'boolean' || typeof r.estimated !== 'boolean'
    ) {
      return null
    }
    numbers[ni] = r.ts
    numbers[ni + 1] = r.status
    numbers[ni + 2] = r.input_tokens
    numbers[ni + 3] = r.output_tokens
    numbers[ni + 4] = r.cache_read_tokens
    numbers[ni + 5] = r.cache_write_tokens
    numbers[ni + 6] = r.cache_write_1h_tokens
    numbers[ni + 7] = r.reasoning_tokens
    numbers[ni + 8] = r.cost_usd
    numbers[ni + 9] = r.latency_ms
    numbers[ni + 10] = r.streamed ? 1 : 0
    numbers[ni + 11] = r.priced ? 1 : 0
    numbers[ni + 12] = r.estimated ? 1 : 0
    ni += NUMS
    refs[ti] = ref(r.provider)
    refs[ti + 1] = ref(r.model)
    refs[ti + 2] = ref(r.endpoint)
    refs[ti + 3] = ref(r.api_key_hash)
    refs[ti + 4] = ref(r.key_hint)
    refs[ti + 5] = ref(r.tenant)
    refs[ti + 6] = ref(r.agent)
    refs[ti + 7] = ref(r.session)
    refs[ti + 8] = ref(r.error)
    refs[ti + 9] = ref(r.response_id)
    refs[ti + 10] = ref(r.source)
    refs[ti + 11] = ref(r.billing)
    refs[ti + 12] = ref(r.project)
    refs[ti + 13] = ref(r.member)
    // Null (or absent) for most calls: a requested model is kept only when the answer names another.
    refs[ti + 14] = ref(r.requested_model)
    // Null (or absent) for most calls too: only a call with searches, modality splits or a provider's charge has it.
    refs[ti + 15] = ref(r.usage_extra)
    for (let k = ti; k < ti + TEXTS; k++) if (refs[k] === BAD) return null
    ti += TEXTS
    const key = r.call_key
    if (typeof key === 'string') keys[i] = key
    else if (key == null) keys[i] = null
    else return null
  }
  return { packed: true, count: n, numbers, refs, texts, keys }
}

/** The calls again, as objects (a field the CallRecord left out is left out again). */
export function unpackCalls(p: PackedCalls): CallRecord[] {
  const out: CallRecord[] = new Array(p.count)
  const { numbers: x, refs, texts, keys } = p
  const text = (k: number): any => (k === NULL_TEXT ? null : k === ABSENT ? undefined : texts[k])
  for (let i = 0, ni = 0, ti = 0; i < p.count; i++, ni += NUMS, ti += TEXTS) {
    const r: CallRecord = {
      ts: x[ni],
      provider: text(refs[ti]),
      model: text(refs[ti + 1]),
      endpoint: text(refs[ti + 2]),
      api_key_hash: text(refs[ti + 3]),
      key_hint: text(refs[ti + 4]),
      tenant: text(refs[ti + 5]),
      agent: text(refs[ti + 6]),
      session: text(refs[ti + 7]),
      status: x[ni + 1],
      streamed: x[ni + 10] === 1,
      input_tokens: x[ni + 2],
      output_tokens: x[ni + 3],
      cache_read_tokens: x[ni + 4],
      cache_write_tokens: x[ni + 5],
      cache_write_1h_tokens: x[ni + 6],
      reasoning_tokens: x[ni + 7],
      cost_usd: x[ni + 8],
      priced: x[ni + 11] === 1,
      estimated: x[ni + 12] === 1,
      latency_ms: x[ni + 9],
      error: text(refs[ti + 8]),
    }
    // Optional fields are set only when the call had them (a missing one gets its column default).
    const responseId = text(refs[ti + 9])
    if (responseId !== undefined) r.response_id = responseId
    const source = text(refs[ti + 10])
    if (source !== undefined) r.source = source
    const billing = text(refs[ti + 11])
    if (billing !== undefined) r.billing = billing
    const project = text(refs[ti + 12])
    if (project !== undefined) r.project = project
    const member = text(refs[ti + 13])
    if (member !== undefined) r.member = member
    const requested = text(refs[ti + 14])
    if (requested !== undefined) r.requested_model = requested
    const extra = text(refs[ti + 15])
    if (extra !== undefined) r.usage_extra = extra
    if (keys[i] !== null) r.call_key = keys[i] as string
    out[i] = r
  }
  return out
}

export function isPacked(rows: readonly CallRecord[] | PackedCalls): rows is PackedCalls {
  return (rows as PackedCalls).packed === true
}

// Every column the ledger writes is carried (checked when this module loads, so a new column cannot be forgotten).
for (const c of CALL_COLUMNS) {
  if (!(NUMBER_FIELDS as readonly string[]).includes(c) && !(FLAG_FIELDS as readonly string[]).includes(c) && !(TEXT_FIELDS as readonly string[]).includes(c)) {
    throw new Error(`ledger/packed.ts does not carry the column ${c}`)
  }
}
