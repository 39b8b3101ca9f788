import { performance } from 'node:perf_hooks'
import type { CallLedger as Ledger } from '../../ledger/types'
import type { CallRecord } from '../../ledger/record'
import { estimateOutputTokens, estimateUsage } from '../../metering/estimate'
import { addBilledSoFar, emptyUsage, hasBilledUnits, type Usage } from '../../metering/usage'
import { usageExtra } from '../../metering/usage-extra'
import type { PendingBackground } from '../../budgets/decision'
import { isBackground } from '../../budgets/expected'
import { markAnnounced } from '../../budgets/feed/admission-told'
import type { BackgroundDone } from '../../pricing/background'
import type { MeterReading } from '../../plans/types'
import type { BatchResult } from '../../providers/types'
import type { Pricer } from '../../pricing/price'
import { uploadUsage } from './audio-usage'
import { limitLabel } from '../attribution'
import { deadlines } from './deadlines'
import type { CallState } from './state'

export interface RecorderOptions {
  ledger: Ledger
  pricer: Pricer
  /**
   * Given a background response's final usage (read from a later answer about it, which costs
   * nothing itself): the call that created the response takes it (../../pricing/background.ts).
   */
  settleBackground?: (done: BackgroundDone) => void
  /** Sees a plan's meter that an answer's body carried (MeterResult.planReading); must not take long. */
  observeReading?: (s: CallState, reading: MeterReading) => void
  /**
   * Given the requests a Batch API's results file held (read through this call, which costs
   * nothing itself): each is recorded once, as a call of its own (../../batch/record.ts).
   */
  recordBatch?: (s: CallState, results: BatchResult[]) => void
  /** Says what metering had to leave out (a results line it could not read). */
  warn?: (msg: string) => void
}

/**
 * A Responses POST with `background: true` that ended without its usage (answered `queued`, or
 * its stream cut) and named its response, or a job whose charge a later answer brings (an xAI
 * video: `later`) and that named it: the job runs on, and its real usage comes with a later
 * answer about it, so its budget reservation is held until then (../../budgets/background-holds.ts).
 */
function pendingBackground(s: CallState, estimated: boolean, responseId: string, later: boolean): PendingBackground | undefined {
  if (!estimated || !responseId || s.status >= 400) return undefined
  if (!later && !isBackground(s.ctx)) return undefined
  return { provider: s.ctx.provider.name, responseId }
}

/**
 * How a call's cost is known when not from its usage: `later`, a job's charge comes with a later
 * answer about it (recorded unpriced meanwhile); `usd`, what its request said it would cost.
 */
type GivenCost = { later: true } | { usd: number }
const LATER: GivenCost = { later: true }

/**
 * Records a call once, when it ends: reads what its meter found, estimates what a cut stream
 * did not report, prices it, settles its admission and writes its ledger row. Synchronous for
 * the usual call (a plain or already decoded body whose usage the provider reported); only a
 * compressed body still being inflated, or a cut stream whose usage must be estimated, waits
 * for a promise. `recorded` runs once the row is written (or could not be).
 */
export function createRecorder(opts: RecorderOptions, recorded: () => void): (s: CallState) => void {
  function meter(s: CallState, latency: number): void {
    let usage: Usage | null = null
    let model = s.ctx.shape.model
    let responseId = ''
    try {
      if (s.sse) s.sse.end()
      // A results file's last line may lack its newline; a line cut short does not parse, so counts nothing.
      if (s.lines) {
        s.lines.end()
        if (s.lines.skipped > 0) {
          opts.warn?.(
            `${s.ctx.provider.name} ${s.ctx.shape.endpoint}: ${s.lines.skipped} line(s) of the answer could not be read (too long to hold, or not whole JSON); any requests they held are not recorded`,
          )
        }
      }
      if (s.json && s.meter) {
        const body = s.json.parse()
        // A streamed JSON array cut short: what its whole elements reported.
        const elements = body === undefined && s.meter.jsonElements ? s.json.cutArray() : undefined
        if (body !== undefined) s.meter.json(body)
        else if (elements) s.meter.jsonElements?.(elements)
        else if (s.meter.jsonCut && s.upstreamStatus < 300) {
          // A body cut mid-transfer: what arrived of its text (and a usage that arrived whole).
          const text = s.json.cutText()
          if (text) s.meter.jsonCut(text)
        }
      }
      const r = s.meter?.result()
      if (r) {
        // The upstream delivered its terminal event before the connection closed (Codex hangs up as
        // soon as it has `response.completed`): the call completed, whatever cut the stream after.
        // Not an answer read on for its bill after its client left: the client never had it.
        if (r.complete && s.upstreamStatus > 0 && s.status !== s.upstreamStatus && !s.clientLeftFirst) {
          s.status = s.upstreamStatus
          s.error = null
        }
        // An upstream's own error type (Anthropic's `error.type`, an OpenAI-compatible `code`) is
        // the ledger's error and the metrics' and OTLP's `error.type`: at most 100 characters of it.
        if (r.error && !s.error) s.error = r.error.length > 100 ? r.error.slice(0, 100) : r.error
        usage = r.usage
        // The answer's name for the model is priced (a lookup whose work grows with its length) and
        // stored: one of megabytes (a server echoing a request's) is cut as the request's is.
        if (r.model) model = limitLabel(r.model)
        if (r.responseId) responseId = r.responseId
        if (r.planReading && opts.observeReading) opts.observeReading(s, r.planReading)
        if (r.batchResults && r.batchResults.length > 0 && opts.recordBatch) opts.recordBatch(s, r.batchResults)
        // A background response's terminal answer: its usage goes to its creating call; one that
        // reports none (cancelled) leaves the estimate, and only ends the call's budget hold.
        if (r.backgroundEnded && responseId && opts.settleBackground) {
          opts.settleBackground({ provider: s.ctx.provider.name, pricingId: s.route.upstream.provider.pricingId, responseId, usage: r.backgroundUsage ?? null })
        }
        // A job whose charge comes with a later answer about it (xAI's videos): recorded unpriced
        // and estimated, to be settled as a background response is (its reservation held until
        // then). One whose answer was cut before it named the job cannot be: no later answer is
        // matched to it, so it is recorded at what its request said it would cost, estimated.
        if (r.chargeLater && s.ctx.shape.billable) {
          const expected = s.ctx.shape.expectedUsd
          const cut = !responseId && expected !== undefined && s.responseStarted && s.upstreamStatus < 300
          record(s, latency, null, model, true, responseId, cut ? { usd: expected } : LATER)
          return
        }
        // A stream cut after its prompt-side usage but before its output count: the prompt counts
        // are the provider's, the output is estimated from what streamed (never less than reported).
        if (usage && r.partialOutput && s.ctx.shape.billable) {
          const u = usage
          const m = model
          estimateOutputTokens(m, r.outputText ?? '', r.outputScale).then(
            (out) => record(s, latency, { ...u, output_tokens: Math.max(u.output_tokens, out) }, m, true, responseId),
            () => record(s, latency, u, m, true, responseId),
          )
          return
        }
        // A successful upstream answer without usage: if the stream was then cut (client gone,
        // upstream reset or stalled), what was generated was billed all the same. A refusal's meter
        // (Provider.refusalMeter) reads only the plan: the refused call ran no model, costs nothing.
        if (!usage && s.ctx.shape.billable && s.responseStarted && s.upstreamStatus < 300) {
          const m = model
          // A transcription billed by its audio's length, which its answer did not give: read from the upload.
          const audio = s.upload ? uploadUsage(s, m, opts.pricer) : null
          if (audio) return record(s, latency, audio, m, true, responseId)
          // What the answer said it is billed for before the cut (the tier that served it, searches
          // and images its tools completed) is billed with the estimate.
          const so = r.billedSoFar
          // Its prompt counts are its body's: a conversation it continued is not in them.
          estimateUsage(m, s.info.body, r.outputText ?? '', r.outputScale).then(
            (u) => record(s, latency, so ? addBilledSoFar(u, so) : u, m, true, responseId, undefined, true),
            () => record(s, latency, so ? addBilledSoFar(emptyUsage(), so) : null, m, so !== undefined, responseId),
          )
          return
        }
      }
    } catch {
      // A response we cannot read is still recorded, with what is known.
    }
    record(s, latency, usage, model, false, responseId)
  }

  function record(s: CallState, latency: number, usage: Usage | null, model: string, estimated: boolean, responseId: string, known?: GivenCost, bodyOnly = false): void {
    try {
      const given = usage ?? emptyUsage()
      // A request billed with the data-residency premium is so whatever its answer said (or if it said nothing).
      let u = s.ctx.shape.dataResidency === true && !given.data_residency ? { ...given, data_residency: true } : given
      // A Perplexity request's search context size (its fee), unless the answer named the one it ran with.
      if (s.ctx.shape.searchContextSize && !u.search_context_size) u = { ...u, search_context_size: s.ctx.shape.searchContextSize }
      // ...and a streamed Sonar Pro request for Pro Search pays its fee (the answer does not say).
      if (s.ctx.shape.proSearch && !u.pro_search) u = { ...u, pro_search: true }
      // An answer of an OpenAI Chat Completions search model searched the web first: one search at the preview rate.
      if (s.ctx.shape.webSearchEachCall && !u.web_searches && hasBilledUnits(u)) u = { ...u, web_searches: 1, web_search_preview: true }
      let cost = 0
      let priced = known === undefined || 'usd' in known
      if (known && 'usd' in known) cost = known.usd
      else if (priced && hasBilledUnits(u)) {
        const p = opts.pricer.price(s.route.upstream.provider.pricingId, s.ctx.provider.name, model, u, new Date(s.ctx.ts))
        cost = p.cost_usd
        priced = p.priced
      }
      let settled: string | void = undefined
      try {
        // Money only: a subscription call settles at 0 (budgets count money).
        settled = s.admission.settle?.(s.ctx.billing === 'subscription' ? 0 : cost, pendingBackground(s, estimated, responseId, known === LATER))
      } finally {
        const requested = s.ctx.shape.model
        const call: CallRecord = {
          ts: s.ctx.ts,
          provider: s.ctx.provider.name,
          model,
          endpoint: s.ctx.shape.endpoint,
          api_key_hash: s.ctx.apiKeyHash,
          key_hint: s.ctx.keyHint,
          tenant: s.ctx.tenant,
          agent: s.ctx.agent,
          session: s.ctx.session,
          status: s.status,
          streamed: s.streamed,
          input_tokens: u.input_tokens,
          output_tokens: u.output_tokens,
          cache_read_tokens: u.cache_read_tokens,
          cache_write_tokens: u.cache_write_tokens,
          cache_write_1h_tokens: u.cache_write_1h_tokens,
          reasoning_tokens: u.reasoning_tokens,
          cost_usd: cost,
          priced,
          // ...or a count in its usage is a guess (an image the image tool made at a size its answer does not name).
          estimated: estimated || u.guessed === true,
          latency_ms: latency,
          error: s.error,
          billing: s.ctx.billing ?? 'api',
          response_id: responseId,
          project: s.ctx.project,
          // Kept only when the answer names another model (a dated version): budget rules match either.
          requested_model: requested !== model && requested !== '' ? requested : null,
          // Searches, modality splits, audio seconds, the provider's own charge: null for a plain call.
          usage_extra: usageExtra(u),
        }
        // Shared budget state: the spend rows that already took this cost (not again on storing it).
        if (typeof settled === 'string') call.budget_settled = settled
        if (s.ctx.rateAnnounced) markAnnounced(call, s.ctx.admission)
        if (bodyOnly) call.prompt_of_body = true
        if (s.refusedRule) call.refused_rule = s.refusedRule
        if (s.clientStatus !== undefined && s.clientStatus !== s.status) call.client_status = s.clientStatus
        opts.ledger.record(call)
      }
    } catch {
      // Never an exception out of here (it would reach an event handler and stop the process):
      // the row is already recorded when what follows it fails, and a ledger closed at shutdown
      // takes no more calls.
    } finally {
      recorded()
    }
  }

  return function finish(s: CallState): void {
    if (s.done) return
    s.done = true
    // Never left undone, however the call ended (it has usually run already).
    s.admission.afterSend?.()
    for (const t of s.timers) deadlines.cancel(t)
    const latency = performance.now() - s.started
    try {
      s.drainTap?.()
    } catch {
      // a body the tap cannot read is recorded with what is known (as when it is metered chunk by chunk)
    }
    const tap = s.tap
    if (tap?.decoding) {
      tap.end().then(
        () => meter(s, latency),
        () => meter(s, latency),
      )
    } else {
      meter(s, latency)
    }
  }
}
