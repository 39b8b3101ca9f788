import { fixture, sseChunks } from '../../support/fixtures'

/** The recorded bodies the bench replays (see test/fixtures/README.md for their token counts). */
export const BENCH_JSON_FIXTURE = 'openai-chat/chat-nonstream-cached.json'
export const BENCH_SSE_FIXTURE = 'anthropic/messages-stream-tool-use.sse'

export const BENCH_JSON = fixture(BENCH_JSON_FIXTURE)
export const BENCH_SSE = fixture(BENCH_SSE_FIXTURE)
/** One chunk per SSE event, as a provider flushes them. */
export const BENCH_SSE_CHUNKS = sseChunks(BENCH_SSE, false)

/** What Burnrate must record for each bench call (from the fixtures README). */
export const EXPECTED_USAGE = {
  'chat.completions': { model: 'gpt-4o-mini-2024-07-18', input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024 },
  messages: { model: 'claude-3-5-sonnet-20240620', input_tokens: 506, output_tokens: 153, cache_read_tokens: 0 },
} as const
