import { isObject } from '../metering/usage'
import type { BatchResult, Meter, MeterResult } from './types'

/** The ledger endpoint of a Batch API request stored from its results file is this and the endpoint it ran on (`batch.chat.completions`). */
const BATCH_PREFIX = 'batch.'

/** Whether a stored call is a Batch API request recorded from its results file (not a call the proxy answered itself). */
export function isBatchResult(endpoint: string | undefined): boolean {
  return endpoint !== undefined && endpoint.startsWith(BATCH_PREFIX)
}

/** Requests handed on at once from a results file read line by line (`Meter.onBatchResults`). */
export const RESULTS_PER_SET = 1000

/** The ledger endpoints of Batch API requests, as a SQL `LIKE` pattern (isBatchResult in a query). */
export const BATCH_RESULT_LIKE = `${BATCH_PREFIX}%`

/**
 * What the meters of Batch API results share (./openai-batch.ts, ./anthropic-batch.ts,
 * ./gemini-batch.ts): the answer itself costs nothing (`usage: null`), and each request it
 * carries, metered by the provider's own meter, is kept as a `BatchResult` at batch rates.
 */
export abstract class BatchResultsMeter implements Meter {
  private results: BatchResult[] = []
  onBatchResults?: (results: BatchResult[]) => void

  constructor(protected readonly now: () => number = Date.now) {}

  event(): void {}

  json(_body: unknown): void {}

  /** The object a results line holds, when it mentions `mark` (lines without it are not parsed), else undefined. */
  protected parse(text: string, mark: string): Record<string, any> | undefined {
    if (!text.includes(mark)) return undefined
    try {
      const o: unknown = JSON.parse(text)
      return isObject(o) ? o : undefined
    } catch {
      return undefined
    }
  }

  /**
   * Keeps a request whose answer the provider's meter read (`got`) on `endpoint` (the one it ran
   * on: `chat.completions`), billed at batch rates, dated `ts` but never after now (a clock ahead
   * of this machine's is not a call in the future); nothing when it had no usage.
   */
  protected add(key: string, ts: number, endpoint: string, got: MeterResult, model = ''): void {
    if (!got.usage) return
    got.usage.batch = true
    const now = this.now()
    // An answer that names no id of its own (OpenAI's embeddings and images, a Gemini embedding) is
    // known by its request's identity, `key`, the same for whoever reads the results: a team server
    // tells a request another member sent already by its answer id (../batch/twins.ts), and without
    // one stored and counted it once per member that read the file.
    const responseId = got.responseId || key
    this.results.push({ key, ts: ts > now ? now : ts, model: got.model || model, endpoint: BATCH_PREFIX + endpoint, usage: got.usage, responseId })
    // Handed on a set at a time as the lines pass: a file of millions of requests (a Gemini
    // batch's, up to 2 GB) is never held whole.
    if (this.onBatchResults && this.results.length >= RESULTS_PER_SET) {
      const set = this.results
      this.results = []
      this.onBatchResults(set)
    }
  }

  result(): MeterResult {
    return { usage: null, complete: true, batchResults: this.results.length > 0 ? this.results : undefined }
  }
}
