import type { IncomingHttpHeaders } from 'node:http'
import { count, emptyUsage, isObject } from '../metering/usage'
import { GeminiMeter } from './gemini'
import { BatchResultsMeter } from './batch-results'
import type { CallShape } from './types'

/** `/v1beta/batches` (list), `/v1beta/batches/{id}` (get), `/v1beta/batches/{id}:cancel`. */
const BATCHES = /^\/v1(?:alpha|beta)?\d*\/batches(?:\/([^/:]+)(:cancel)?)?$/
/** A file's bytes: `/v1beta/files/{id}:download` or `/download/v1beta/files/{id}:download` (with `alt=media`). */
const DOWNLOAD = /^(?:\/download)?\/v1(?:alpha|beta)?\d*\/files\/([^/:]+):download$/

/**
 * The Gemini Batch API's reads by method and path, or null for another path: getting and listing
 * batches (whose answers carry a finished batch's inline results) and cancelling one add no
 * spend, so they are free for budget rules. Creating one (`models/{model}:batchGenerateContent`)
 * is a request like any other.
 */
export function geminiBatchShape(method: string, path: string): Pick<CallShape, 'endpoint' | 'free' | 'lines'> | null {
  // A file's bytes cost nothing; a batch's results file is read line by line (GeminiBatchFileMeter).
  if (method === 'GET' && path.endsWith(':download') && DOWNLOAD.test(path)) return { endpoint: 'files.download', free: true, lines: true }
  const m = path.includes('/batches') ? BATCHES.exec(path) : null
  if (!m) return null
  if (!m[1]) return method === 'GET' ? { endpoint: 'batches.list', free: true } : null
  if (m[2]) return method === 'POST' ? { endpoint: 'batches.cancel', free: true } : null
  return method === 'GET' ? { endpoint: 'batches.get', free: true } : method === 'DELETE' ? { endpoint: 'batches.delete', free: true } : null
}

/**
 * What the Gemini meter reads of one answer (a GenerateContentResponse): its usage, and the Google
 * Search queries a grounded answer ran (./gemini-grounding.ts), billed with it.
 */
const RESPONSE_FIELDS = ['usageMetadata', 'modelVersion', 'responseId', 'candidates.*.groundingMetadata.webSearchQueries']
/** Where a batch's answer puts its inline results (GeminiBatchMeter.batch), and the batch's own fields it reads. */
const OUTPUTS = ['response', 'response.dest', 'metadata.output', 'output', 'dest']
const LARGE_JSON_PATHS: readonly string[] = ['$', '$.operations.*', '$.batches.*'].flatMap((op) => [
  `${op}.name`,
  `${op}.metadata.model`,
  `${op}.metadata.endTime`,
  ...OUTPUTS.flatMap((out) => RESPONSE_FIELDS.map((f) => `${op}.${out}.inlinedResponses.inlinedResponses.*.response.${f}`)),
  // An embedding batch's results (under either name: the SDKs rename `inlinedResponses` holding embeddings): their token counts, never the vectors.
  ...OUTPUTS.flatMap((out) => ['inlinedResponses', 'inlinedEmbedContentResponses'].map((list) => `${op}.${out}.${list}.inlinedResponses.*.response.tokenCount`)),
])

/**
 * Meters the answer of a Gemini batch's get (or a list of batches): a finished batch built from
 * inline requests carries its results, `inlinedResponses.inlinedResponses[]`, each `{response:
 * <GenerateContentResponse>, metadata}` or `{error}`, in the order of the requests (under the
 * operation's `response` or its `dest`, or `metadata.output` as newer answers put it). Each result with usage is
 * a call of its own, read by the Gemini meter (cached and thinking tokens, modalities), priced at
 * batch rates (`usage.batch`: half, as Google prices its Batch API), keyed by the batch's name and
 * its place in the batch, so polling the same finished batch again records nothing more. A
 * batch whose results went to a file (`responsesFile`) is not metered here. The results name no
 * time: the calls are dated when the batch ended (`metadata.endTime`), else when they are read.
 */
export class GeminiBatchMeter extends BatchResultsMeter {
  /** What `json` reads of an answer too large to hold (thousands of inline results): never the answers' text. */
  readonly largeJsonPaths = LARGE_JSON_PATHS

  override json(body: unknown): void {
    if (!isObject(body)) return
    const ops = Array.isArray(body.operations) ? body.operations : Array.isArray(body.batches) ? body.batches : [body]
    for (const op of ops) if (isObject(op)) this.batch(op)
  }

  private batch(op: Record<string, any>): void {
    const name = typeof op.name === 'string' ? op.name : ''
    const meta = isObject(op.metadata) ? op.metadata : {}
    const outputs = [op.response, op.response?.dest, meta.output, op.output, op.dest]
    const out = firstOf(outputs, 'inlinedResponses') ?? firstOf(outputs, 'inlinedEmbedContentResponses')
    if (!name || !out) return
    const batchModel = typeof meta.model === 'string' ? meta.model.replace(/^models\//, '') : ''
    // Dated when the batch ended, as its answer says (`metadata.endTime`), else now.
    const ended = typeof meta.endTime === 'string' ? Date.parse(meta.endTime) : NaN
    const at = Number.isFinite(ended) ? ended : this.now()
    out.forEach((item, i) => {
      if (!isObject(item) || !isObject(item.response)) return
      if (!isObject(item.response.usageMetadata)) {
        // An embedding batch's (`asyncBatchEmbedContent`): its `tokenCount`, input tokens at the model's embedding price.
        const tokens = tokenCount(item.response.tokenCount)
        if (tokens > 0) this.add(`gemini-batch:${name}:${i}`, at, 'embedContent', { usage: { ...emptyUsage(), input_tokens: tokens }, complete: true }, batchModel)
        return
      }
      const m = new GeminiMeter()
      m.json(item.response)
      this.add(`gemini-batch:${name}:${i}`, at, 'generateContent', m.result(), batchModel)
    })
  }
}

/**
 * Meters a Gemini file download (`files.download`): when it is a batch's results file (JSON Lines,
 * `{key?, response: <GenerateContentResponse>}` or `{key?, error}` per line, in the order of the
 * requests), each line with usage is a call of its own at batch rates, keyed by the file and the
 * line's `key` (else its place), so reading the file again records nothing more. Any other file
 * (an image, a video) has no such lines and yields nothing. A part of the file from elsewhere than
 * its start (a resumed download: `Range: bytes=N-`, answered 206 `Content-Range: bytes N-…`) does
 * not tell its lines' places: its lines without a `key` are left to a read of the whole file
 * (recorded by the places they seemed to have, the whole read took the file's first lines for
 * them, recorded already, and never recorded those).
 */
export class GeminiBatchFileMeter extends BatchResultsMeter {
  private index = -1
  /** Whether the lines' places are the file's: false for an answer that starts past the file's first byte. */
  private placed = true

  constructor(
    private readonly fileId: string,
    now?: () => number,
  ) {
    super(now)
  }

  /** What `lineObject` reads of a line too long to hold: never the answer's text. */
  readonly longLinePaths = ['$.key', ...RESPONSE_FIELDS.map((f) => `$.response.${f}`)]

  headers(h: IncomingHttpHeaders): void {
    const range = /^\s*bytes\s+(\d+)-/i.exec(String(h['content-range'] ?? ''))
    if (range && Number(range[1]) > 0) this.placed = false
  }

  line(text: string): void {
    const o = this.fileId ? this.parse(text, '"usageMetadata"') : undefined
    if (o) this.lineObject(o)
    else this.index++
  }

  lineObject(o: Record<string, any>): void {
    this.index++
    if (!this.fileId || !isObject(o.response) || !isObject(o.response.usageMetadata)) return
    const keyed = typeof o.key === 'string' && o.key !== ''
    if (!keyed && !this.placed) return
    const m = new GeminiMeter()
    m.json(o.response)
    const key = keyed ? `k:${o.key}` : `i:${this.index}`
    this.add(`gemini-batch-file:${this.fileId}:${key}`, this.now(), 'generateContent', m.result())
  }
}

/** The file id of a download path, or ''. */
export function downloadFileId(path: string): string {
  return DOWNLOAD.exec(path)?.[1] ?? ''
}

/**
 * The results array of the first output that has them under `field` (`{inlinedResponses:
 * {inlinedResponses: [...]}}`; an embedding batch's `{inlinedEmbedContentResponses:
 * {inlinedResponses: [...]}}`), or undefined.
 */
function firstOf(outputs: readonly unknown[], field: 'inlinedResponses' | 'inlinedEmbedContentResponses'): unknown[] | undefined {
  for (const output of outputs) {
    const list = isObject(output) && isObject(output[field]) ? output[field].inlinedResponses : undefined
    if (Array.isArray(list)) return list
  }
  return undefined
}

/** An embedding result's `tokenCount`: an int64, which Google's JSON gives as a string of digits (a number is taken too); else 0. */
function tokenCount(v: unknown): number {
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v)
  return count(v)
}
