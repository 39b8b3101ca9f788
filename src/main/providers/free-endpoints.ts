/**
 * Every endpoint, as the ledger records it (`calls.endpoint`), whose calls a provider's shape
 * marks `free` (CallShape.free): reads and cancels of what is already billed (a stored response, a
 * batch and its results, a file's bytes). No budget rule refuses them or counts them against
 * `requests_per_minute`, so the last minute's requests read back from the ledger (a restart, a
 * rule change, another instance's calls) leave them out. Each provider's shape is checked against
 * this list (free-endpoints.test.ts).
 */
export const FREE_ENDPOINTS: readonly string[] = [
  // OpenAI (and the APIs that speak it): openai-endpoints.ts
  'responses.retrieve',
  'responses.cancel',
  'files.content',
  'batches.list',
  'batches.retrieve',
  'batches.cancel',
  // Anthropic's Message Batches: anthropic-batch.ts
  'messages.batches.list',
  'messages.batches.retrieve',
  'messages.batches.cancel',
  'messages.batches.results',
  'messages.batches.delete',
  // Gemini's Batch API and files: gemini-batch.ts
  'batches.get',
  'batches.delete',
  'files.download',
  // xAI's video status polls: xai-video.ts
  'videos.retrieve',
  // xAI's Batch API, its own reads (its cancel is `batches.cancel`): xai-batch.ts
  'batches.requests.list',
  'batches.results',
  // Perplexity's async jobs, their polls and list: perplexity-async.ts
  'async.chat.completions.retrieve',
  'async.chat.completions.list',
]
