import { OpenAIBatchMeter } from './openai-batch'

/**
 * Together AI's Batch API (https://docs.together.ai/docs/inference/batch/overview): a batch's
 * answers come back in its output file (`GET /files/{output_file_id}/content`), one line per
 * request that succeeded (`{id, custom_id, response: {status_code, body}}`, the body a chat
 * completion with its `usage`; failed requests go to a separate error file and are not billed).
 * Each is recorded once, by the file and its `custom_id` (which Together requires unique), with
 * its model and tokens.
 *
 * Its tokens are recorded unpriced: Together discounts batches only for the models its list names
 * ("up to 50%"; "models not listed run at standard rates"), a list that changes, and the price data
 * carries no batch rate, so no rate can be confirmed per model. They are never priced at a guessed
 * discount, nor at the list price.
 */
export function togetherBatchMeter(fileId: string): OpenAIBatchMeter {
  return new OpenAIBatchMeter('together', fileId, undefined, { compatible: true, rateUnknown: true })
}
