import { count, emptyUsage, isObject, type Usage } from '../metering/usage'
import type { CallShape, Meter, MeterResult, RequestInfo } from './types'

/** `POST /ocr`: Mistral's OCR (Document AI), below the mount's `/v1`. */
const OCR = /^\/ocr\/*$/

/**
 * Mistral's OCR (`POST /v1/ocr`, https://docs.mistral.ai/api): billed by the page, not by tokens,
 * and dearer per page when the request asks for annotations (`document_annotation_format` or
 * `bbox_annotation_format`). Null for any other request.
 */
export function inspectOcr(req: RequestInfo): CallShape | null {
  if (req.method !== 'POST' || !OCR.test(req.path)) return null
  const body = isObject(req.body) ? req.body : undefined
  return { endpoint: 'ocr', model: typeof body?.model === 'string' ? body.model : '', stream: false, billable: true }
}

/** Whether an OCR request asks for annotations, billed at the annotated pages' rate. */
export function annotated(body: unknown): boolean {
  return isObject(body) && (isObject(body.document_annotation_format) || isObject(body.bbox_annotation_format))
}

/**
 * Reads an OCR answer's `usage_info.pages_processed` as the pages @pydantic/genai-prices prices
 * (`input_document_pages`; with annotations, all of them annotated, `input_annotated_document_pages`,
 * as the library's own Mistral `ocr_annotated` extractor reads them).
 */
export class OcrMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private complete = false

  constructor(private readonly annotated: boolean) {}

  event(): void {
    // OCR answers are JSON, never streamed.
  }

  json(body: unknown): void {
    this.complete = true
    if (!isObject(body)) return
    if (typeof body.model === 'string' && body.model) this.model = body.model
    if (!isObject(body.usage_info)) return
    const usage = emptyUsage()
    const pages = count(body.usage_info.pages_processed)
    if (pages > 0) usage.extra = this.annotated ? { input_document_pages: pages, input_annotated_document_pages: pages } : { input_document_pages: pages }
    this.usage = usage
  }

  result(): MeterResult {
    return { usage: this.usage, model: this.model, complete: this.complete }
  }
}
