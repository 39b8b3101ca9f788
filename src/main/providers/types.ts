import type { IncomingHttpHeaders } from 'node:http'
import type { BilledSoFar, SearchContextSize, Usage } from '../metering/usage'
import type { MeterReading } from '../plans/types'

/** What the proxy knows of a request when it asks a provider about it. */
export interface RequestInfo {
  method: string
  /** The path below the provider's mount, starting with `/` (e.g. `/chat/completions`), without query. */
  path: string
  /** The raw query string, without `?` (may be empty). */
  query: string
  headers: IncomingHttpHeaders
  /** The parsed JSON request body, or undefined when there is none or it is not JSON. */
  body: any
}

/** What a call is, decided from the request before it goes upstream. */
export interface CallShape {
  /** A short endpoint name for the ledger, e.g. `chat.completions`, `messages`, `other`. */
  endpoint: string
  /** The model the request names ('' when none). */
  model: string
  /**
   * The model whose price a budget reservation takes when `model` has none and its calls were
   * never answered as a priced one (`reservedCost`): a Gemini interaction run by an agent (its
   * `agent`, no model of the price data) is reserved as the model the agent runs on. Not what the
   * call is recorded at.
   */
  reserveAs?: string
  /** Whether the client asked for a stream. */
  stream: boolean
  /** Whether the endpoint is billed by tokens at all (false: models lists, token counting). */
  billable: boolean
  /**
   * A read or a cancel of something already billed (the Responses API's retrieve and cancel of a
   * stored response): it adds no spend, so budget rules neither refuse it nor count it as a request.
   */
  free?: boolean
  /** True when the response may carry no usage (an OpenAI stream without include_usage): its tokenizer is loaded early. */
  mayLackUsage?: boolean
  /**
   * The answer is read as JSON Lines, each line given to `Meter.line` as it passes (a Batch API's
   * results file: one finished request per line), instead of being parsed whole.
   */
  lines?: boolean
  /**
   * The answer names the provider's own address of something the client then fetches directly
   * (Anthropic's Message Batch `results_url`): `Provider.relink` points it back at Burnrate, so
   * that read passes through it too. The (small) answer is held whole to be rewritten.
   */
  relink?: boolean
  /**
   * Every token of the call is billed with the data-residency premium (`Usage.data_residency`):
   * the request asks for US-only inference (Anthropic's `inference_geo: "us"`), or goes to a
   * Vertex AI regional endpoint with a model billed higher there. Budgets reserve with it, and
   * the call is recorded with it (an answer saying it ran in the US only is so too).
   */
  dataResidency?: boolean
  /**
   * The request asks for a faster, dearer tier (Anthropic's `speed: "fast"`, OpenAI's
   * `service_tier: "priority"` or `"fast"`, the Gemini API's `serviceTier: "priority"`): budgets
   * reserve it at the model's fast price (`Usage.fast`: an override's, else OpenAI's or Google's
   * published Priority price). Not what it is recorded at: the answer says which speed served it.
   */
  fast?: boolean
  /**
   * The request leaves its tier to the project (OpenAI's and Azure OpenAI's with no `service_tier`,
   * or `"auto"`: "processed with the service tier configured in the Project settings"), which may
   * be Fast mode: budgets reserve it at the fast price once the key's project was seen to serve the
   * model so (budgets/expected.ts, `CallHistory.servedFast`). Never set with `fast`.
   */
  projectTier?: boolean
  /**
   * The search context size a Perplexity Sonar request runs with (its
   * `web_search_options.search_context_size`, else Perplexity's default, `low`), which sets the
   * call's request fee: budgets reserve with it, and the call is recorded with it unless its
   * answer names another (`Usage.search_context_size`).
   */
  searchContextSize?: SearchContextSize
  /**
   * A Perplexity Sonar request for Pro Search (`web_search_options.search_type: "pro"`), which
   * runs only on a stream: a streamed one is recorded and reserved at Pro Search's request fee
   * (`Usage.pro_search`); one not streamed falls back to standard Sonar Pro and is not marked.
   */
  proSearch?: boolean
  /**
   * A Chat Completions request to one of OpenAI's search models (`gpt-4o-search-preview`,
   * `gpt-4o-mini-search-preview`, or any with `web_search_options`), which search the web before
   * every answer: its answer is recorded, and budgets reserve it, with one web search at the
   * `web_search_preview` rate (`Usage.web_search_preview`; ../pricing/tool-fees.ts).
   */
  webSearchEachCall?: boolean
  /**
   * A Gemini request with the Google Search tool (`tools[].googleSearch`, `google_search_retrieval`…;
   * Gemini Code Assist's under `request`). What it searched is read from its answer
   * (`Usage.google_search_queries`); with `pricing.google_search_grounding: paid`, budgets reserve
   * one query (Gemini 3) or one grounded prompt (older models) for it (../pricing/search-grounding.ts).
   */
  googleSearch?: boolean
  /**
   * What the request itself says the call will cost (USD), for a call billed by what it asks
   * for rather than by tokens, whose charge comes with a later answer: an xAI video, its seconds
   * at the model's per-second price (./xai-video.ts). Budgets reserve it (and hold it until the
   * charge is in), and a call whose answer is cut before naming what it made is recorded at it.
   */
  expectedUsd?: number
}

/**
 * One request a Batch API ran, as its results file tells it (`MeterResult.batchResults`): a
 * model call of its own, billed at batch rates (`usage.batch`), recorded once however often the
 * file is read.
 */
export interface BatchResult {
  /** Unique for this request across reads of the file and across instances: the provider's own id of it. */
  key: string
  /** When it ran (ms), as the result tells it, else when its result was read. */
  ts: number
  model: string
  /** The ledger endpoint, e.g. `batch.chat.completions`. */
  endpoint: string
  usage: Usage
  /** The provider's id of the answer (`chatcmpl-…`, `resp_…`, `msg_…`); for an answer that names none, the request's `key`. */
  responseId: string
}

/** What a meter found in a response. */
export interface MeterResult {
  /** The usage the provider reported, or null when it reported none. */
  usage: Usage | null
  /** The model the response names, when it names one (more precise than the request's). */
  model?: string
  /** The provider's id of the answer (`msg_…`, `resp_…`, `chatcmpl-…`, Gemini's `responseId`), when it sent one. */
  responseId?: string
  /** Text the response streamed, kept only while no usage was seen, for estimation. */
  outputText?: string
  /**
   * True once the response's terminal event arrived (Responses `response.completed`/`.incomplete`/
   * `.failed`, Anthropic `message_stop`, Chat Completions `[DONE]`, Gemini's chunk with a
   * `finishReason`) or a whole JSON body was read: the call completed, even if a connection closes
   * a moment later.
   */
  complete?: boolean
  /**
   * True when `usage` holds exact prompt-side counts but the output count is not final (an
   * Anthropic stream cut between `message_start` and its last `message_delta`, a Gemini stream cut
   * before its last event): the output tokens are estimated from `outputText`, never below
   * `usage.output_tokens`, and the call is marked estimated.
   */
  partialOutput?: boolean
  /**
   * A background response's final usage, read from an answer that is not the call that created it
   * (OpenAI `GET /responses/{id}`, as JSON or streamed, or its cancel): the call that created the
   * response (`responseId`) is billed it, once; this answer itself costs nothing (`usage` is null).
   */
  backgroundUsage?: Usage
  /** A background response read again in a terminal state (with or without its usage). */
  backgroundEnded?: boolean
  /**
   * The answer only accepted a job (xAI's video generation) whose charge a later answer about it
   * (`responseId`) reports, as `backgroundUsage`: the call is recorded estimated and unpriced at
   * $0 until then, never estimated from its request (its job is not billed by tokens).
   */
  chargeLater?: boolean
  /**
   * With `outputText`: the estimate from it times this, when the text kept was only a share of
   * what streamed (OutputText's bound; Anthropic's events kept after `message_start`).
   */
  outputScale?: number
  /**
   * What an answer that reported no usage (a stream cut before its terminal event) had already
   * said it is billed for, added to the estimate it is recorded with (`addBilledSoFar`): the tier
   * that served it (`fast`, `batch`; else the one its request explicitly asked for), the searches
   * its completed tool calls ran, the images a Responses image_generation tool made (`guessed`
   * when a count is a guess). Undefined when there is none of these (an answer with usage carries
   * them in `usage`).
   */
  billedSoFar?: BilledSoFar
  /** A plan's meter that the answer's body carried (Gemini Code Assist's quotas), for the plan windows. */
  planReading?: MeterReading
  /** A Batch API's results file: each request it ran with its usage (this answer itself costs nothing). */
  batchResults?: BatchResult[]
  /**
   * The error a successful (200) answer carried in its body (an Anthropic stream's `error` event,
   * e.g. `overloaded_error`): recorded as the call's `error` when nothing else failed it.
   */
  error?: string
}

/**
 * Reads usage out of one response. The proxy feeds it either SSE events (streams) or the
 * whole parsed JSON body, then asks for the result once the response has ended.
 */
export interface Meter {
  /** The answer's headers, before its body (Bedrock's InvokeModel counts a call's tokens there). */
  headers?(headers: IncomingHttpHeaders): void
  /**
   * The meter reads the plan's meter in the answer's headers itself, with what its body adds (a
   * Codex 429's reset: ./chatgpt.ts), in its `planReading`: the plans feature's headers observer
   * leaves this answer's headers to it, so one answer is one reading.
   */
  readonly readsPlanHeaders?: boolean
  event(name: string, data: string): void
  /** The whole parsed JSON body (an array for Gemini's streamed JSON without `alt=sse`). */
  json(body: unknown): void
  /**
   * The complete elements of a JSON array answer cut before its end (Gemini's streamed JSON
   * without `alt=sse`, reset or abandoned): metered as a stream cut after them.
   */
  jsonElements?(elements: unknown[]): void
  /**
   * The text of a JSON answer cut before its end (reset, or the client left, mid-body), which
   * did not parse: what arrived of its output, for the estimate, and its usage if that arrived
   * whole (../metering/cut-json.ts). The answer is not complete.
   */
  jsonCut?(body: string): void
  /** One line of a JSON Lines answer (`CallShape.lines`), as text. */
  line?(text: string): void
  /**
   * What `line` reads of a line too long to hold whole (paths as ../metering/path-picker.ts takes
   * them); such a line's picked values, in its shape, go to `lineObject` instead.
   */
  readonly longLinePaths?: readonly string[]
  lineObject?(line: Record<string, unknown>): void
  /** What `json` reads of a body too large to hold whole (past 64 MB): its picked values, in its shape, go to `json`. */
  readonly largeJsonPaths?: readonly string[]
  /**
   * A Batch API's results file read line by line: where its requests go as the lines pass, a set
   * at a time (../batch/record.ts), rather than all of them in `result()` once it has been read.
   */
  onBatchResults?: (results: BatchResult[]) => void
  result(): MeterResult
}

/** Where a request can carry an API key: `Authorization: Bearer`, a key header, or `?key=`. */
export type CredentialSource = 'authorization' | 'x-api-key' | 'x-goog-api-key' | 'api-key' | 'query-key'

/** One upstream provider: where it lives, how its calls are recognised and metered. */
export interface Provider {
  /** Route and ledger name, e.g. `openai`. */
  name: string
  /** The provider id in @pydantic/genai-prices. */
  pricingId: string
  /** The SDK-style base URL that the mount maps to; null when it must be configured. */
  defaultBaseUrl: string | null
  /**
   * For a provider whose addresses name where a call goes (Vertex AI's location, Bedrock's
   * region): from a request's path below the mount, the path to send upstream and the base URL
   * that serves it when none is configured; null when the path names no place. Only hosts of the
   * provider's own may come out of it.
   */
  place?(path: string): { path: string; baseUrl: string } | null
  /** What to set when a call has no upstream (default: `providers.<name>.base_url`). */
  noUpstreamHint?: string
  /** The local path prefix that stands for the base URL, e.g. `/openai/v1` or `/anthropic`. */
  mount: string
  /**
   * Where the provider reads the API key it bills, in the order it prefers them (the first one
   * present is the call's recorded key). Default: `Authorization: Bearer`, as OpenAI and every
   * OpenAI-compatible API read it.
   */
  credentials?: readonly CredentialSource[]
  inspect(req: RequestInfo): CallShape
  /**
   * Whether a request's JSON body is one metering never reads, so it is streamed upstream as it
   * comes rather than read whole (../proxy/call/request-stream.ts): Anthropic's Message Batch
   * creation, up to 256 MB of requests, its shape known from its path. (A body of another type
   * is streamed whenever its call is not billable.) Default: none.
   */
  streamsJson?(method: string, path: string): boolean
  meter(shape: CallShape, req: RequestInfo): Meter
  /**
   * A meter for an error answer (`status` 400 and up) whose body tells of the plan, or null (the
   * default: an error answer is not read). Only a plan's meter comes of it (`planReading`: Gemini
   * Code Assist's 429 naming a used-up quota), never usage: a refused call ran no model.
   */
  refusalMeter?(status: number, shape: CallShape, req: RequestInfo): Meter | null
  /**
   * With `CallShape.relink`: the answer's text with the provider's addresses that clients fetch
   * directly pointed at `base` (Burnrate's address of this provider, as the client reached it),
   * or null when it names none.
   */
  relink?(text: string, base: string): string | null
  /**
   * The provider's Anthropic-compatible Messages API, where it serves one at a base URL of its own
   * (./anthropic-compatible.ts: DeepSeek's, Moonshot's, Z.ai's): a second route into the same
   * provider (same name, prices and `enabled`), mounted at its own path, its base URL moved with
   * `providers.<name>.anthropic_base_url`.
   */
  anthropicApi?: Provider
  /** The provider as configured (`providers.<name>` in the config), when settings change it (Azure deployments, Bedrock profiles). */
  configure?(settings: ProviderSettings): Provider
}

/** A provider's section of the config (`providers.<name>`). */
export interface ProviderSettings {
  base_url?: string
  /** The base URL of the provider's Anthropic-compatible API (`Provider.anthropicApi`), where it has one. */
  anthropic_base_url?: string
  enabled?: boolean
  /** Azure: deployment name -> model name, for pricing. */
  deployments?: Record<string, string>
  /** Bedrock: application inference profile (its ARN or id) -> model id, for pricing. */
  profiles?: Record<string, string>
}
