import { BENCH_JSON, BENCH_SSE } from './fixtures'
import type { CallSpec } from './load'

export interface Scenario {
  key: 'nonstream' | 'stream'
  title: string
  /** The ledger endpoint Burnrate records these calls under. */
  endpoint: 'chat.completions' | 'messages'
  call: CallSpec
}

// A realistic prompt: a few KB of system text, as agents send (the JSON fixture's call had 1149 prompt tokens).
const SYSTEM = 'You are a careful coding assistant. Answer with working code and a short explanation. '.repeat(48)

const openaiBody = Buffer.from(
  JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Write a function that parses an ISO-8601 duration into seconds.' },
    ],
    temperature: 0.2,
  }),
)

const anthropicBody = Buffer.from(
  JSON.stringify({
    model: 'claude-3-5-sonnet-20240620',
    max_tokens: 1024,
    stream: true,
    system: SYSTEM.slice(0, 2000),
    metadata: { user_id: 'user_bench_account_0000_session_5f0c6a4e-1b2c-4d3e-9f00-123456789abc' },
    tools: [
      {
        name: 'get_weather',
        description: 'Get the current weather in a given location',
        input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
      },
    ],
    messages: [{ role: 'user', content: 'What is the weather like in San Francisco and in Paris?' }],
  }),
)

export const SCENARIOS: Scenario[] = [
  {
    key: 'nonstream',
    title: `non-streaming: POST /v1/chat/completions, ${openaiBody.length} B request, ${BENCH_JSON.length} B JSON answer`,
    endpoint: 'chat.completions',
    call: {
      method: 'POST',
      path: '/v1/chat/completions',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-proj-bench0000000000000000000000000000000000000000000000',
        'user-agent': 'OpenAI/Python 1.99.0',
      },
      body: openaiBody,
      expectBytes: BENCH_JSON.length,
    },
  },
  {
    key: 'stream',
    title: `streaming: POST /v1/messages, ${anthropicBody.length} B request, ${BENCH_SSE.length} B SSE answer in chunks`,
    endpoint: 'messages',
    call: {
      method: 'POST',
      path: '/v1/messages',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-api03-bench000000000000000000000000000000000000000000000',
        'anthropic-version': '2023-06-01',
        'user-agent': 'claude-cli/2.0.14 (external, cli)',
      },
      body: anthropicBody,
      expectBytes: BENCH_SSE.length,
    },
  },
]
