import { Counter, Histogram, type Registry } from 'prom-client'
import type { CallBilling } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import type { MovedCost } from '../pricing/moves'
import { isRefusal } from './budgets'
import { BoundedLabel, OTHER, billingLabel } from './labels'

/** Seconds a whole call takes, as the client sees it: LLM calls run from ~0.1 s to minutes. */
export const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640]

/** Token types, as `burnrate_tokens_total{type}` names them, and the record field each comes from. */
export const TOKEN_TYPES = [
  ['input', 'input_tokens'],
  ['output', 'output_tokens'],
  ['cache_read', 'cache_read_tokens'],
  ['cache_write', 'cache_write_tokens'],
  ['reasoning', 'reasoning_tokens'],
] as const satisfies readonly (readonly [string, keyof CallRecord])[]

/** Slots after the token sums in a drain's per-model sums. */
const UNPRICED = TOKEN_TYPES.length
const ESTIMATED = TOKEN_TYPES.length + 1

/** Bounds on client-chosen label values (see BoundedLabel). */
const LIMITS = { model: 200, agent: 50, tenant: 200, reason: 20 }

/**
 * Label sets a per-call counter keeps apart (the OTLP export's instruments keep as many, ../otel).
 * Each client-chosen label is bounded, their combinations are not: 200 models by 50 agents for 20
 * tenants made 200,000 cost series, a 21 MB scrape that held the event loop for seconds. Past it a
 * new set is counted with its agent and tenant `other`, its model kept: totals stay whole.
 */
export const SERIES_LIMIT = 20_000

interface Series {
  calls: Counter.Internal
  duration: Histogram.Internal<string>
}

interface ModelSeries {
  tokens: Counter.Internal[]
  unpriced: Counter.Internal
  estimated: Counter.Internal
  pricedLater: Counter.Internal
  estimatesSettled: Counter.Internal
}

/**
 * The per-call counters, fed from the ledger: every call `Ledger.record()` takes is counted
 * once, so the counters match the ledger's rows. The ledger listener only queues the call;
 * the counters are brought up to date in batches (before each scrape, and once a second), so a
 * proxied call pays for one array push.
 */
export class CallMetrics {
  private queue: CallRecord[] = []
  private readonly calls: Counter
  private readonly tokens: Counter
  private readonly tokenReductions: Counter
  private readonly cost: Counter
  private readonly reductions: Counter
  private readonly unpriced: Counter
  private readonly estimated: Counter
  private readonly pricedLater: Counter
  private readonly estimatesSettled: Counter
  private readonly refusals: Counter
  private readonly duration: Histogram
  private readonly model = new BoundedLabel(LIMITS.model)
  private readonly agent = new BoundedLabel(LIMITS.agent)
  private readonly tenant = new BoundedLabel(LIMITS.tenant)
  private readonly reason = new BoundedLabel(LIMITS.reason)
  /** Label children by their joined label values: one map lookup per call instead of prom-client's label hashing. */
  private readonly series = new Map<string, Series>()
  private readonly modelSeries = new Map<string, ModelSeries>()
  private readonly costSeries = new Map<string, Counter.Internal>()

  constructor(
    registry: Registry,
    /** The budget rule a refused call's key is under, as a label value (see budgets.ts). */
    private readonly ruleOf: (call: CallRecord) => string,
  ) {
    const registers = [registry]
    this.calls = new Counter({
      name: 'burnrate_calls_total',
      help: 'Proxied calls, as recorded in the ledger (refusals, errors and client aborts included).',
      labelNames: ['provider', 'model', 'agent', 'status', 'streamed'],
      registers,
    })
    this.tokens = new Counter({
      name: 'burnrate_tokens_total',
      help: 'Tokens by type; cache_read and cache_write are parts of input, reasoning is part of output.',
      labelNames: ['provider', 'model', 'type'],
      registers,
    })
    this.tokenReductions = new Counter({
      name: 'burnrate_token_reductions_total',
      help: 'How many tokens recorded calls have fewer after they were recorded (an estimate replaced by the real usage): the tokens are burnrate_tokens_total minus this.',
      labelNames: ['provider', 'model', 'type'],
      registers,
    })
    this.cost = new Counter({
      name: 'burnrate_cost_usd_total',
      help: 'Cost of the proxied calls in US dollars, as recorded in the ledger (never rounded), plus what they cost more when re-priced or settled later; billing="subscription" is plan usage at its API-equivalent value, not spend.',
      labelNames: ['provider', 'model', 'agent', 'tenant', 'billing'],
      registers,
    })
    this.reductions = new Counter({
      name: 'burnrate_cost_reductions_usd_total',
      help: 'How much recorded calls cost less after they were recorded (re-priced lower), in US dollars: spend is burnrate_cost_usd_total minus this (both billing="api").',
      labelNames: ['provider', 'model', 'agent', 'tenant', 'billing'],
      registers,
    })
    this.unpriced = new Counter({
      name: 'burnrate_unpriced_calls_total',
      help: 'Calls with tokens but no known price (recorded at cost 0).',
      labelNames: ['provider', 'model'],
      registers,
    })
    this.estimated = new Counter({
      name: 'burnrate_estimated_calls_total',
      help: 'Calls whose token counts were estimated because the provider sent none.',
      labelNames: ['provider', 'model'],
      registers,
    })
    // A counter never goes down: a call that stops being unpriced or estimated after it was
    // counted (re-priced, a job's real usage taken) is counted again here, so that what is still
    // unpriced or estimated is one counter minus the other.
    this.pricedLater = new Counter({
      name: 'burnrate_unpriced_calls_priced_total',
      help: 'Calls counted in burnrate_unpriced_calls_total that got a price later (re-priced once a price was set, or a job priced when its result came): the calls still unpriced are burnrate_unpriced_calls_total minus this.',
      labelNames: ['provider', 'model'],
      registers,
    })
    this.estimatesSettled = new Counter({
      name: 'burnrate_estimated_calls_settled_total',
      help: 'Calls counted in burnrate_estimated_calls_total that took their real usage later (a background response, video or async job whose result came): the calls still estimated are burnrate_estimated_calls_total minus this. A re-price changes no call\'s estimate.',
      labelNames: ['provider', 'model'],
      registers,
    })
    this.refusals = new Counter({
      name: 'burnrate_refusals_total',
      help: 'Calls Burnrate refused with 429 before they went upstream, by reason and budget rule.',
      labelNames: ['reason', 'rule'],
      registers,
    })
    this.duration = new Histogram({
      name: 'burnrate_request_duration_seconds',
      help: "Whole call, from its arrival to the last byte sent to the client (the ledger's latency_ms).",
      labelNames: ['provider', 'streamed'],
      buckets: DURATION_BUCKETS,
      registers,
    })
  }

  /** The ledger listener: queues the call (counted at the next drain). */
  readonly observe = (call: CallRecord): void => {
    this.queue.push(call)
  }

  /**
   * Recorded calls' costs and tokens that moved (re-pricing, a background response's real usage):
   * a rise is added to `burnrate_cost_usd_total` (`burnrate_tokens_total`), a fall to
   * `burnrate_cost_reductions_usd_total` (`burnrate_token_reductions_total`): a counter never goes
   * down. Under the labels the call was counted with; queued calls are counted first.
   */
  readonly moved = (moves: readonly MovedCost[]): void => {
    this.drain()
    for (const m of moves) {
      try {
        const model = this.model.value(m.model)
        const labels = this.costLabels(m.provider, model, this.agent.value(m.agent), this.tenant.value(m.tenant), billingLabel(m.billing))
        if (m.delta > 0) this.costSeriesOf(...labels).inc(m.delta)
        else if (m.delta < 0) this.reductions.labels(...labels).inc(-m.delta)
        if (m.tokens) this.tokensMoved(m.provider, model, m.tokens)
        if (m.marks) this.marksMoved(m.provider, model, m.marks)
      } catch {
        // a value prom-client refuses is that move's loss only
      }
    }
  }

  private tokensMoved(provider: string, model: string, tokens: NonNullable<MovedCost['tokens']>): void {
    const series = this.modelSeriesOf(provider, model)
    TOKEN_TYPES.forEach(([type, field], i) => {
      const d = tokens[field] ?? 0
      if (d > 0) series.tokens[i].inc(d)
      else if (d < 0) this.tokenReductions.labels(provider, model, type).inc(-d)
    })
  }

  /** A call's marks changed after it was counted: each change counted once (a counter never goes down). */
  private marksMoved(provider: string, model: string, marks: NonNullable<MovedCost['marks']>): void {
    const series = this.modelSeriesOf(provider, model)
    if (marks.priced) series.pricedLater.inc()
    if (marks.unpriced) this.showUnpriced(series, 1)
    if (marks.settled) series.estimatesSettled.inc()
  }

  /** `n` more unpriced calls; the series of those priced later shows from then on too, at 0, so the two can be subtracted. */
  private showUnpriced(m: ModelSeries, n: number): void {
    m.unpriced.inc(n)
    m.pricedLater.inc(0)
  }

  private modelSeriesOf(provider: string, model: string): ModelSeries {
    const mkey = `${provider}\n${model}`
    let m = this.modelSeries.get(mkey)
    if (!m) {
      m = {
        tokens: TOKEN_TYPES.map(([type]) => this.tokens.labels(provider, model, type)),
        unpriced: this.unpriced.labels(provider, model),
        estimated: this.estimated.labels(provider, model),
        pricedLater: this.pricedLater.labels(provider, model),
        estimatesSettled: this.estimatesSettled.labels(provider, model),
      }
      this.modelSeries.set(mkey, m)
    }
    return m
  }

  /** The cost counters' labels of a call: its own, or past SERIES_LIMIT sets (one not counted yet) with agent and tenant `other`. */
  private costLabels(provider: string, model: string, agent: string, tenant: string, billing: CallBilling): [string, string, string, string, CallBilling] {
    if (this.costSeries.size >= SERIES_LIMIT && !this.costSeries.has(`${provider}\n${model}\n${agent}\n${tenant}\n${billing}`)) return [provider, model, OTHER, OTHER, billing]
    return [provider, model, agent, tenant, billing]
  }

  private costSeriesOf(provider: string, model: string, agent: string, tenant: string, billing: CallBilling): Counter.Internal {
    const ckey = `${provider}\n${model}\n${agent}\n${tenant}\n${billing}`
    let cost = this.costSeries.get(ckey)
    if (!cost) {
      cost = this.cost.labels(provider, model, agent, tenant, billing)
      this.costSeries.set(ckey, cost)
    }
    return cost
  }

  /** Calls queued and not yet counted. */
  get queued(): number {
    return this.queue.length
  }

  /**
   * Counts every queued call. Whole numbers (calls, tokens) are summed per series first and
   * added once per drain: prom-client hashes the labels on every inc, even of a label child.
   * Cost is added call by call, in the ledger's order, so its sums are the ledger's to the bit.
   */
  drain(): void {
    const q = this.queue
    if (q.length === 0) return
    this.queue = []
    const calls = new Map<Series, number>()
    const perModel = new Map<ModelSeries, number[]>()
    for (const c of q) {
      try {
        this.count(c, calls, perModel)
      } catch {
        // a value prom-client refuses (a NaN cost) is that one call's loss, never the batch's
      }
    }
    for (const [s, n] of calls) s.calls.inc(n)
    for (const [m, sums] of perModel) {
      try {
        for (let i = 0; i < TOKEN_TYPES.length; i++) if (sums[i] > 0) m.tokens[i].inc(sums[i])
        if (sums[UNPRICED] > 0) this.showUnpriced(m, sums[UNPRICED])
        if (sums[ESTIMATED] > 0) {
          m.estimated.inc(sums[ESTIMATED])
          m.estimatesSettled.inc(0)
        }
      } catch {
        // a token count that is not a number spoils that model's sums only
      }
    }
  }

  private count(c: CallRecord, calls: Map<Series, number>, perModel: Map<ModelSeries, number[]>): void {
    const model = this.model.value(c.model)
    const agent = this.agent.value(c.agent)
    const streamed = c.streamed ? 'true' : 'false'
    // The status the client got (README): a refusal sent as a 403 is recorded as its 429.
    const status = String(c.client_status ?? c.status)
    let key = `${c.provider}\n${model}\n${agent}\n${status}\n${streamed}`
    let s = this.series.get(key)
    if (!s) {
      // Past SERIES_LIMIT sets, a new one is counted with agent `other` (its model kept).
      const callsAgent = this.series.size >= SERIES_LIMIT ? OTHER : agent
      key = `${c.provider}\n${model}\n${callsAgent}\n${status}\n${streamed}`
      s = this.series.get(key)
      if (!s) {
        s = {
          calls: this.calls.labels(c.provider, model, callsAgent, status, streamed),
          duration: this.duration.labels(c.provider, streamed),
        }
        this.series.set(key, s)
      }
    }
    s.duration.observe(c.latency_ms / 1000)
    calls.set(s, (calls.get(s) ?? 0) + 1)

    const m = this.modelSeriesOf(c.provider, model)
    let sums = perModel.get(m)
    if (!sums) {
      sums = new Array<number>(TOKEN_TYPES.length + 2).fill(0)
      perModel.set(m, sums)
    }
    for (let i = 0; i < TOKEN_TYPES.length; i++) sums[i] += c[TOKEN_TYPES[i][1]]
    if (!c.priced) sums[UNPRICED]++
    if (c.estimated) sums[ESTIMATED]++

    // inc(0) still creates the series, so a provider's calls show with their $0.
    this.costSeriesOf(...this.costLabels(c.provider, model, agent, this.tenant.value(c.tenant), billingLabel(c.billing))).inc(c.cost_usd)

    if (isRefusal(c)) this.refusals.labels(this.reason.value(c.error), this.ruleOf(c)).inc()
  }
}
