import { DATA_RESIDENCY_MULTIPLIER, emptyUsage } from '../metering/usage'
import { FastKeys } from './fast-keys'
import type { Pricer } from '../pricing/price'
import type { CallContext } from '../proxy/gate'
import { type ToolKind, toolKind } from './tool-kinds'
import { INPUT_ONLY, maxOutputTokens, promptTokenBound, reservedCost, reservedPerUseUsd, worstCaseUsd } from './worst-case'

/**
 * The expected cost of a call, reserved against a `block` rule while it is in flight (the
 * default, `reserve: expected`; `reserve: max_tokens` reserves the worst case instead, see
 * worst-case.ts).
 *
 * - Output: the 95th percentile of the output tokens of the last 100 answered calls of the same
 *   provider and requested model, capped by the call's own `max_tokens` (or its kin). Until 5
 *   such calls were seen, DEFAULT_EXPECTED_OUTPUT_TOKENS, capped the same way.
 * - Input: the 95th percentile of what the prompt cost per request-body byte in those calls
 *   (their real input, cache reads and writes priced exactly as billed), times this body's
 *   size. Until then, the body's bytes / 3 as uncached input (the worst-case bound).
 * - A Responses turn continuing a stored conversation (`previous_response_id`) whose last answer
 *   this instance saw adds that answer's prompt and output tokens at the continuing call's price:
 *   as many of them at the cache-read rate as that prompt read from the cache, the rest as
 *   uncached input (./conversations.ts). Its body says nothing of them; one whose last answer was
 *   not seen here (a restart, another PostgreSQL instance) reserves its body alone.
 * - A background response (`background: true`: OpenAI's Responses, Gemini's Interactions) is expected from background responses of its
 *   provider and model once one has taken its real usage (its result read through Burnrate): a
 *   deep-research job's output and its prompt's cost (web results read as input) are tens of
 *   times an ordinary call's, so they are kept apart, and one such job already says more than
 *   the default. Until then, as the foreground calls of its model.
 * - Priced at the model's price; a requested model with no known price at the price of the model
 *   its last answered call named (an Azure deployment's own name: see worst-case.ts), else 0.
 *   A call billed with the data-residency premium (`CallShape.dataResidency`) reserves it too;
 *   one asking for a fast tier (`CallShape.fast`) reserves its prompt's bound and its output at
 *   the model's fast price (a `pricing.overrides` entry with `speed: fast`, else OpenAI's or the
 *   Gemini API's published Priority price or the Claude API's fast-mode price for the model, else
 *   the standard one: the Pricer's, as the call is recorded).
 *   So does a call that leaves its tier to the project (`CallShape.projectTier`: OpenAI's and Azure
 *   OpenAI's) once the key's last such call of its model was answered at a fast tier
 *   (`CallHistory.servedFast`: the project's default tier is Fast mode).
 *   A Perplexity Sonar call reserves the request fee of its search context size (`CallShape.searchContextSize`),
 *   Pro Search's for a streamed Sonar Pro request for it (`CallShape.proSearch`); an OpenAI Chat
 *   Completions search model's call, the web search it makes for every answer (`CallShape.webSearchEachCall`).
 * - Charges beyond tokens: the 95th percentile of what those calls were charged beyond their tokens
 *   (./call-fees.ts: searches, images, grounding queries that only an answer names, the consultations
 *   of Claude's advisor tool at the advisor model's rates, whose tokens are no part of the output and
 *   prompt cost learnt above; of a call whose provider reported its charge, only those its usage names), less what the price of this call's tokens already counts from its request
 *   (`reservedPerUseUsd`: a search model's one search, the image tool's one image, Gemini's first
 *   query), never below 0; added beyond the worst-case cap. Kept apart for background responses, as
 *   the figures above, and apart for requests that name a tool billed per use and for those that name
 *   the advisor tool (./tool-kinds.ts): a call naming none is not charged the searches of those that
 *   do, nor a searching call the advice of those that ask for it. Each instance learns from its
 *   own answered calls (on PostgreSQL too: the shared history and feed carry other instances' calls
 *   only into the meters and `answeredAs`).
 * - A call whose request says what it will cost (`CallShape.expectedUsd`: an xAI video, its seconds
 *   at the model's per-second price) reserves that, under either kind of reservation.
 */

export const DEFAULT_EXPECTED_OUTPUT_TOKENS = 4096
const SAMPLES = 100
const MIN_SAMPLES = 5
/** A background job's real usage: one says more than the default (see above). */
const MIN_BACKGROUND_SAMPLES = 1
const PERCENTILE = 0.95

/**
 * The last SAMPLES values and their 95th percentile. The window is also kept sorted, one
 * removal and one insertion per value (binary search, then a move of at most SAMPLES slots, in
 * place: nothing is allocated per value), so the percentile is read, not sorted for, on every
 * call that follows an answer.
 */
class Samples {
  /** The values in arrival order (a ring once full). */
  private readonly values = new Float64Array(SAMPLES)
  /** The same values, ascending, in the first `n` slots. */
  private readonly sorted = new Float64Array(SAMPLES)
  private n = 0
  private next = 0

  constructor(private readonly min: number) {}

  add(v: number): void {
    const sorted = this.sorted
    let n = this.n
    if (n === SAMPLES) {
      const gone = this.values[this.next]
      // The value leaving is the one coming (a fee of 0, the same output again): the sorted
      // window holds the same values, so only the ring moves on.
      if (gone === v) {
        this.next = (this.next + 1) % SAMPLES
        return
      }
      const r = lowerBound(sorted, n, gone)
      sorted.copyWithin(r, r + 1, n)
      n--
    }
    this.values[this.next] = v
    const at = lowerBound(sorted, n, v)
    sorted.copyWithin(at + 1, at, n)
    sorted[at] = v
    this.n = n + 1
    this.next = (this.next + 1) % SAMPLES
  }

  get size(): number {
    return this.n
  }

  p95(): number | null {
    const n = this.n
    if (n < this.min) return null
    return this.sorted[Math.min(n - 1, Math.ceil(PERCENTILE * n) - 1)]
  }
}

/** The first index of `sorted`'s first `n` values (ascending) whose value is not below `v`. */
function lowerBound(sorted: Float64Array, n: number, v: number): number {
  let lo = 0
  let hi = n
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid] < v) lo = mid + 1
    else hi = mid
  }
  return lo
}

interface ModelHistory {
  output: Samples
  inputUsdPerByte: Samples
  /** What each call was charged beyond its tokens (./call-fees.ts), by the kind of tools its request names (./tool-kinds.ts): none... */
  feesUsd: Samples
  /** ...a tool billed per use (a call that names none makes no search nor image)... */
  toolFeesUsd: Samples
  /** ...Claude's advisor tool (its consultations, at the advisor model's rates). */
  advisorFeesUsd: Samples
  /** The model the last answered call named, when it was not the one requested and had a price. */
  answered?: string
}

/** Endpoints whose `background: true` requests run on after the call: OpenAI's Responses, Gemini's Interactions. */
const BACKGROUND_ENDPOINTS: ReadonlySet<string> = new Set(['responses', 'interactions'])

/** Whether a call creates a background response (its job runs on after the call, see above). */
export function isBackground(ctx: Pick<CallContext, 'shape' | 'body'>): boolean {
  return BACKGROUND_ENDPOINTS.has(ctx.shape.endpoint) && ctx.body?.background === true
}

/** The histories of one kind of call (foreground, background), per provider and requested model. */
class Models {
  /** By provider, then model (two lookups: no key string built per call). */
  private readonly providers = new Map<string, Map<string, ModelHistory>>()
  private count = 0

  constructor(private readonly min: number) {}

  of(provider: string, model: string, create: true): ModelHistory
  of(provider: string, model: string, create: false): ModelHistory | undefined
  of(provider: string, model: string, create: boolean): ModelHistory | undefined {
    let models = this.providers.get(provider)
    let h = models?.get(model)
    if (!h && create) {
      // Bounded: one entry per model a client named; a flood of invented names stops at 10,000.
      if (this.count >= 10_000) {
        this.providers.clear()
        this.count = 0
        models = undefined
      }
      if (!models) {
        models = new Map()
        this.providers.set(provider, models)
      }
      h = { output: new Samples(this.min), inputUsdPerByte: new Samples(this.min), feesUsd: new Samples(this.min), toolFeesUsd: new Samples(this.min), advisorFeesUsd: new Samples(this.min) }
      models.set(model, h)
      this.count++
    }
    return h
  }
}

/** What answered calls produced, per provider and requested model (in memory; a restart learns again). */
export class CallHistory {
  private readonly foreground = new Models(MIN_SAMPLES)
  /** Background responses' real usage, apart: mixed in, ordinary calls would reserve a deep-research job's cost. */
  private readonly background = new Models(MIN_BACKGROUND_SAMPLES)
  /** The keys whose project's default tier is Fast mode, per provider and model (`servedFast`). */
  private readonly fastKeys = new FastKeys()

  private of(provider: string, model: string): ModelHistory | undefined {
    return this.foreground.of(provider, model, false)
  }

  /**
   * A requested model answered as another priced one, seen in a call stored by another instance
   * (PostgreSQL's calls feed) or before this start (the ledger): a rule naming only the answered
   * model then counts the requested name's calls here too, before this process has answered one.
   */
  noteAnswered(provider: string, requested: string, answered: string): void {
    if (!requested || !answered || answered === requested) return
    this.foreground.of(provider, requested, true).answered = answered
  }

  /**
   * From a read of stored calls (PostgreSQL's re-read of the meters): the latest answered model of
   * each requested name none is known for yet. What this process heard or answered while the
   * read ran may be newer than the read's snapshot, so a known one is kept.
   */
  noteAnsweredFromRead(rows: readonly { provider: string; model: string; requested: string | null; last: number }[]): void {
    const fresh = rows.filter((r) => r.requested && r.requested !== r.model && !this.answeredAs(r.provider, r.requested))
    for (const r of fresh.sort((a, b) => a.last - b.last)) this.noteAnswered(r.provider, r.requested!, r.model)
  }

  /**
   * A call of key `hash` that left its tier to the project (`CallShape.projectTier`) was answered
   * at a fast tier (`fast`: the project's default tier is OpenAI's Fast mode, billed at the model's
   * fast price) or not (the default changed back).
   */
  noteTier(provider: string, model: string, hash: string, fast: boolean): void {
    this.fastKeys.note(provider, model, hash, fast)
  }

  /**
   * Whether a call that asks for no tier is to be reserved at its model's fast price: it leaves its
   * tier to the project (`CallShape.projectTier`), and the key's last such call of the model was
   * answered at a fast tier. Not a call that asked for its tier by its own means (a Gemini or
   * Vertex AI priority or flex request): that its answers were fast says nothing of the others.
   */
  servedFast(ctx: Pick<CallContext, 'provider' | 'shape' | 'apiKeyHash'>): boolean {
    return ctx.shape.projectTier === true && !ctx.shape.fast && this.fastKeys.has(ctx.provider.name, ctx.shape.model, ctx.apiKeyHash)
  }

  /**
   * `feesUsd`: what the call was charged beyond its tokens (./call-fees.ts), null when unknown;
   * `tools`: the kind of tools its request names (./tool-kinds.ts).
   * `background`: a background response's real usage (./background-holds.ts), learnt apart.
   */
  learn(provider: string, model: string, outputTokens: number, inputUsdPerByte: number | null, feesUsd: number | null, answered?: string, background = false, tools: ToolKind = 'none'): void {
    const h = (background ? this.background : this.foreground).of(provider, model, true)
    h.output.add(outputTokens)
    if (inputUsdPerByte !== null && Number.isFinite(inputUsdPerByte)) h.inputUsdPerByte.add(inputUsdPerByte)
    if (feesUsd !== null && Number.isFinite(feesUsd) && feesUsd >= 0) fees(h, tools).add(feesUsd)
    if (answered && answered !== model) h.answered = answered
  }

  /** The priced model the requested `model`'s last answered call named instead (see ModelHistory.answered). */
  readonly answeredAs = (provider: string, model: string): string | undefined => this.of(provider, model)?.answered ?? this.background.of(provider, model, false)?.answered

  output(provider: string, model: string): number | null {
    return this.of(provider, model)?.output.p95() ?? null
  }

  inputUsdPerByte(provider: string, model: string): number | null {
    return this.of(provider, model)?.inputUsdPerByte.p95() ?? null
  }

  /** The figures with one lookup (the hot path's); a background response's from background ones once known, else as a foreground call's. */
  expectations(provider: string, model: string, background = false, tools: ToolKind = 'none'): { output: number | null; inputUsdPerByte: number | null; feesUsd: number | null } {
    const h = this.of(provider, model)
    const b = background ? this.background.of(provider, model, false) : undefined
    return {
      output: b?.output.p95() ?? h?.output.p95() ?? null,
      inputUsdPerByte: b?.inputUsdPerByte.p95() ?? h?.inputUsdPerByte.p95() ?? null,
      feesUsd: (b && fees(b, tools).p95()) ?? (h && fees(h, tools).p95()) ?? null,
    }
  }
}

/** The charges beyond tokens learnt for requests naming `tools`. */
function fees(h: ModelHistory, tools: ToolKind): Samples {
  return tools === 'none' ? h.feesUsd : tools === 'billed' ? h.toolFeesUsd : h.advisorFeesUsd
}

/**
 * `carried`, `carriedCached`: the tokens of the stored conversation a Responses turn continues
 * (`previous_response_id`), as this instance saw it answered, and the part of them its last prompt
 * read from the cache (./conversations.ts); 0 for any other call.
 */
export function expectedUsd(pricer: Pricer, history: CallHistory, ctx: CallContext, carried = 0, carriedCached = 0): number {
  if (!ctx.shape.billable) return 0
  // What the request says it costs (an xAI video's seconds at its per-second price): no tokens to expect.
  if (ctx.shape.expectedUsd !== undefined) return ctx.shape.expectedUsd
  if (!ctx.shape.model) return 0
  const model = ctx.shape.model
  const price = (input: number, output: number): number => {
    const usage = emptyUsage()
    usage.input_tokens = input + carried
    // The conversation's cache reads as its last prompt had them; the rest of it (that prompt's
    // uncached part, its answer's output) as uncached input.
    usage.cache_read_tokens = carriedCached
    usage.output_tokens = output
    return reservedCost(pricer, ctx, usage, history.answeredAs)
  }
  const seen = history.expectations(ctx.provider.name, model, isBackground(ctx), toolKind(ctx.body))
  const outTokens = INPUT_ONLY.has(ctx.shape.endpoint) ? 0 : Math.min(maxOutputTokens(ctx.body), seen.output ?? DEFAULT_EXPECTED_OUTPUT_TOKENS)
  // The prompt's cost per byte is learnt at list prices (budgets/index.ts): a call asking for a
  // fast tier prices its prompt's bound at the fast price instead, one billed with the
  // data-residency premium adds it here.
  const perByte = ctx.shape.fast ? null : seen.inputUsdPerByte
  // What the model's calls were charged beyond their tokens (searches, images, grounding queries
  // their answers named), past what the tokens' price below already counts from the request.
  const fees = seen.feesUsd ? Math.max(0, seen.feesUsd - reservedPerUseUsd(pricer, ctx, history.answeredAs)) : 0
  if (perByte === null) return price(promptTokenBound(ctx.bodyBytes), outTokens) + fees
  const prompt = perByte * ctx.bodyBytes * (ctx.shape.dataResidency ? DATA_RESIDENCY_MULTIPLIER : 1)
  const expected = prompt + (outTokens > 0 || carried > 0 ? price(0, outTokens) : 0)
  // Never more than the call's worst case (its prompt's bound and its output cap): a learnt rate
  // far above what the body can hold would refuse the key's other calls for one call's sake. The
  // charges beyond tokens are no part of that bound (how many searches a call makes is not in its body).
  return Math.min(expected, worstCaseUsd(pricer, ctx, history.answeredAs, carried)) + fees
}

/**
 * A call whose prompt is mostly not in its body: a Responses turn that continues a stored
 * conversation (`previous_response_id`, `conversation`: Codex's later turns on its WebSocket,
 * the Agents SDK), billed for the whole conversation while its body holds only what is new. Its
 * prompt's cost per body byte says nothing of another call's, so it is not learnt from.
 */
export function continuesStored(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false
  const b = body as Record<string, unknown>
  return (typeof b.previous_response_id === 'string' && b.previous_response_id !== '') || (b.conversation !== undefined && b.conversation !== null)
}
