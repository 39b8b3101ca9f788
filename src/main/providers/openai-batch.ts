import { isObject } from '../metering/usage'
import { OpenAIMeter } from './openai-meter'
import type { UsageReader } from './openai-usage'
import { BatchResultsMeter } from './batch-results'
import { type BatchOfFile, batchOfFile } from './openai-batch-files'

/**
 * What an image answer (`/v1/images/generations`, `/v1/images/edits`: `{created, data, background,
 * output_format, quality, size, usage}`, no `object`) has that no other answer has, read of a line
 * too long to hold (its images' base64) as of any other.
 */
const IMAGE_FIELDS = ['output_format', 'quality', 'size', 'background'] as const

/** What the OpenAI meter reads of an answer (`json`), under a results line's `response.body`. */
const BODY_FIELDS = ['object', 'model', 'id', 'usage', 'created', 'created_at', 'service_tier', 'status', 'error', 'incomplete_details', ...IMAGE_FIELDS]
const LONG_LINE_PATHS: readonly string[] = [
  '$.id',
  '$.custom_id',
  '$.response.status_code',
  ...BODY_FIELDS.map((f) => `$.response.body.${f}`),
  // The Responses API's tool calls, counted by type (web searches are billed per call), and the
  // images its image_generation tool made, billed by their quality and size at the tool's model
  // (../providers/openai-image-tool.ts): never their base64.
  '$.response.body.output.*.type',
  '$.response.body.output.*.action.type',
  ...['id', 'status', 'quality', 'size'].map((f) => `$.response.body.output.*.${f}`),
  '$.response.body.tools',
]

/** The endpoint of a batch request, by the `object` of the answer it got. */
const BY_OBJECT: Record<string, string> = {
  'chat.completion': 'chat.completions',
  response: 'responses',
  text_completion: 'completions',
  // Embeddings answer with a list of `embedding` objects.
  list: 'embeddings',
}

/**
 * Meters a file read with `GET /files/{id}/content`. When it is a Batch API's output file (one
 * JSON object per line: `{id: "batch_req_…", custom_id, response: {status_code, body}, error}`),
 * each request that succeeded is a call of its own, priced at the batch rates (`usage.batch`),
 * with its answer's usage read as OpenAI's meter reads the same answer from the endpoint itself.
 * Any other file (a batch's input, fine-tuning data, an upload) has no such lines and yields
 * nothing. The file itself costs nothing.
 *
 * Each request is recorded once, by the provider and the line's `id`. Azure OpenAI's output
 * files have no `id`: their lines are told apart by the file and their `custom_id`, which a batch
 * requires unique.
 */
export class OpenAIBatchMeter extends BatchResultsMeter {
  constructor(
    private readonly provider: string,
    private readonly fileId: string,
    now?: () => number,
    private readonly opts: BatchFileOptions = {},
  ) {
    super(now)
  }

  /** What `lineObject` reads of a line too long to hold (an embeddings request of a thousand inputs): never the vectors or the text. */
  readonly longLinePaths = LONG_LINE_PATHS

  line(text: string): void {
    // Only a results line is parsed: any other file's lines cost a substring search.
    const o = text.includes('"custom_id"') ? this.parse(text, '"response"') : undefined
    if (o) this.lineObject(o)
  }

  lineObject(o: Record<string, any>): void {
    if (typeof o.custom_id !== 'string') return
    const key = this.keyOf(o.id, o.custom_id)
    if (!key) return
    const r = o.response
    // An errored request (its `error`, or a status of 400 or more) was not billed.
    if (!isObject(r) || typeof r.status_code !== 'number' || r.status_code >= 400 || !isObject(r.body)) return
    const body = r.body
    const batch = batchOfFile(this.fileId)
    const compatible = this.opts.compatible === true
    const endpoint = typeof body.object === 'string' ? BY_OBJECT[body.object] : !compatible && isImages(body, batch) ? 'images' : undefined
    if (!endpoint) return
    const m = new OpenAIMeter({ endpoint, usage: this.opts.usage })
    m.json(body)
    const got = m.result()
    if (got.usage && this.opts.rateUnknown) got.usage.batch_rate_unknown = true
    // An image answer names no model: its batch's, as the Batch object read before the file said;
    // none known, the request is recorded unpriced (never guessed, never $0 as if priced).
    this.add(key, ranAt(body, this.now()), endpoint, got, endpoint === 'images' ? (batch?.model ?? '') : '')
  }

  /** The request's key: the line's own id, else (Azure, and the compatible providers) the file's id and its custom id; '' when neither. */
  private keyOf(id: unknown, customId: string): string {
    if (!this.opts.compatible && typeof id === 'string' && id !== '') return `${this.provider}-batch:${id}`
    if (this.fileId && customId !== '') return `${this.provider}-batch-file:${this.fileId}:${customId}`
    return ''
  }
}

/** How another provider's output file in OpenAI's shape is read (./groq-batch.ts, ./together-batch.ts, ./mistral-batch.ts). */
export interface BatchFileOptions {
  /**
   * Not OpenAI's own: each request is keyed by the file and its `custom_id`, which every such
   * provider requires unique within a batch (a line's `id`, where it has one, is not documented as
   * unique per request), and only answers that name their `object` (chat completions, embeddings)
   * are read: no image batches.
   */
  compatible?: boolean
  /** The provider's batch discount is not known for the model: the tokens are recorded unpriced (`usage.batch_rate_unknown`). */
  rateUnknown?: boolean
  /** The provider's reader of an answer's `usage`, where it differs from OpenAI's. */
  usage?: UsageReader
}

/** Whether a line's answer is an image API's: its batch ran on `/v1/images/…`, or it has what only an image answer has. */
function isImages(body: Record<string, any>, batch: BatchOfFile | undefined): boolean {
  if (body.object !== undefined) return false
  if (batch?.endpoint.startsWith('/v1/images/')) return true
  return Array.isArray(body.data) || IMAGE_FIELDS.some((f) => typeof body[f] === 'string')
}

/** When the request ran: its answer's `created` (Chat Completions) or `created_at` (Responses), in seconds; else `now` (BatchResultsMeter.add keeps it from the future). */
function ranAt(body: Record<string, any>, now: number): number {
  const s = typeof body.created_at === 'number' ? body.created_at : body.created
  if (typeof s !== 'number' || !Number.isFinite(s) || s <= 0) return now
  return Math.round(s * 1000)
}
