import { readCodeAssistQuota } from '../plans/code-assist'
import { readCodeAssistRefusal } from '../plans/code-assist-refusal'
import type { MeterReading } from '../plans/types'
import { GeminiMeter } from './gemini'
import { requestsGoogleSearch } from './gemini-grounding'
import type { CallShape, Meter, MeterResult, Provider, RequestInfo } from './types'

/**
 * Gemini Code Assist (`https://cloudcode-pa.googleapis.com`): the API Gemini CLI talks to when
 * logged in with Google (a free or paid Code Assist tier, not an API key), at the address in its
 * `CODE_ASSIST_ENDPOINT` environment variable. Methods are `POST /v1internal:<method>`; the model
 * calls (`generateContent`, `streamGenerateContent?alt=sse`) wrap Gemini's request and answer:
 * `{model, project, user_prompt_id, request: {contents, …, session_id}}` and
 * `{response: {candidates, usageMetadata, modelVersion, …}, traceId}` (gemini-cli
 * packages/core/src/code_assist/converter.ts). Its other methods (loadCodeAssist, quotas,
 * experiments) cost nothing; the answer to `retrieveUserQuota` is the plan's meter (its windows:
 * ../plans/code-assist.ts), and so is a model call's 429 for a used-up quota (the window full:
 * ../plans/code-assist-refusal.ts). Calls are priced as Google's models (their API-equivalent value) and
 * recorded with `billing: "subscription"`: a Google login pays no money per token.
 */

/** `/v1internal:streamGenerateContent` -> `streamGenerateContent` ('' for any other path). */
function methodOf(path: string): string {
  const m = /^\/v1[a-z0-9]*:([A-Za-z]+)$/.exec(path)
  return m ? m[1] : ''
}

const MODEL_CALLS = new Set(['generateContent', 'streamGenerateContent'])

export function inspectCodeAssist(req: RequestInfo): CallShape {
  const method = methodOf(req.path)
  const model = typeof req.body?.model === 'string' ? req.body.model.replace(/^models\//, '') : ''
  const shape: CallShape = {
    endpoint: method || 'other',
    model,
    stream: method === 'streamGenerateContent',
    billable: req.method === 'POST' && MODEL_CALLS.has(method),
  }
  // Gemini's request is under `request`: its Google Search tool, as for the Gemini API.
  if (shape.billable && requestsGoogleSearch(req.body)) shape.googleSearch = true
  return shape
}

/** Reads a model call's 429: a used-up quota fills its model's window (../plans/code-assist-refusal.ts); no usage. */
class RefusalMeter implements Meter {
  private reading: MeterReading | null = null
  constructor(private readonly model: string) {}
  event(): void {}
  json(body: unknown): void {
    this.reading = readCodeAssistRefusal(body, this.model)
  }
  result(): MeterResult {
    return { usage: null, planReading: this.reading ?? undefined }
  }
}

/** Reads the quotas of a `retrieveUserQuota` answer; no usage. */
class QuotaMeter implements Meter {
  private reading: MeterReading | null = null
  event(): void {}
  json(body: unknown): void {
    this.reading = readCodeAssistQuota(body)
  }
  result(): MeterResult {
    return { usage: null, complete: true, planReading: this.reading ?? undefined }
  }
}

export const codeAssist: Provider = {
  name: 'code-assist',
  pricingId: 'google',
  defaultBaseUrl: 'https://cloudcode-pa.googleapis.com',
  mount: '/code-assist',
  inspect: inspectCodeAssist,
  meter: (shape) => (shape.endpoint === 'retrieveUserQuota' ? new QuotaMeter() : new GeminiMeter({ envelope: true })),
  // Out of a quota, Code Assist refuses a model call with 429 and says which quota and until when.
  refusalMeter: (status, shape) => (status === 429 && shape.billable ? new RefusalMeter(shape.model) : null),
}
