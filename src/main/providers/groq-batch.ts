import { OpenAIBatchMeter } from './openai-batch'

/**
 * Groq's Batch API (https://console.groq.com/docs/batch): OpenAI's, under `/openai/v1`: a batch's
 * answers come back in its output file (`GET /files/{output_file_id}/content`), one OpenAI-shaped
 * line per request (`{id, custom_id, response: {status_code, request_id, body}, error}`, the body a
 * chat completion with its `usage`). Each request that succeeded is recorded once, by the file and
 * its `custom_id` (which Groq requires unique), with its model and tokens.
 *
 * Its tokens are recorded unpriced: the discount Groq publishes for batches has changed over time
 * (none when it launched, then 25%, for a list of models that changes) and the price
 * data carries none, so no rate can be confirmed
 * for the day a request ran. They are never priced at a guessed discount, nor at the list price.
 */
export function groqBatchMeter(fileId: string): OpenAIBatchMeter {
  return new OpenAIBatchMeter('groq', fileId, undefined, { compatible: true, rateUnknown: true })
}
