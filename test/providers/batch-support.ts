import { calcPrice } from '@pydantic/genai-prices'
import { expect } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import type { TestServer } from '../support/server'
import { rows } from './ledger'

// An OpenAI Batch API output file built from recorded answers (test/fixtures), as
// `GET /v1/files/{output_file_id}/content` returns it, and the calls it must be recorded as.

/**
 * When the requests ran (the answers' `created`, in seconds): two minutes ago, but never before
 * today's start in UTC (the tests' timezone), so they count in today's spend and the budget's day.
 */
export const RAN = Math.max(Math.floor(Date.now() / 1000) - 120, Math.floor(new Date().setUTCHours(0, 0, 0, 0) / 1000))

/** The recorded answers, as the batch ran them. */
export const chat = { ...fixtureJson('openai-chat/chat-nonstream-cached.json'), created: RAN }
export const reasoning = { ...fixtureJson('openai-chat/chat-nonstream-reasoning.json'), created: RAN + 1 }
export const response = { ...fixtureJson('openai-responses/responses-nonstream-reasoning.json'), created_at: RAN + 2 }

/** One line of an output file, in the Batch API's shape. */
export const line = (id: string, custom: string, body: object | null, status = 200) =>
  JSON.stringify(
    body
      ? { id, custom_id: custom, response: { status_code: status, request_id: `req_${id}`, body }, error: null }
      : { id, custom_id: custom, response: null, error: { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' } },
  )

export const OUTPUT = Buffer.from(
  [
    line('batch_req_aaa001', 'task-1', chat),
    line('batch_req_aaa002', 'task-2', reasoning),
    line('batch_req_aaa003', 'task-3', null),
    line('batch_req_aaa004', 'task-4', { error: { message: 'Invalid model', type: 'invalid_request_error' } }, 400),
    line('batch_req_aaa005', 'task-5', response),
  ].join('\n') + '\n',
)

/** The key of storedAfter's reads: matched by no test's budget rule, its rows left out by `notMarks`. */
export const MARK_KEY = 'sk-mark-batch-aaaaaaaaaaaa'
let marks = 0

/**
 * Reads an OpenAI results file of its own (one request, under an answer id of its own) through
 * `t`, `upstream` serving it, and waits for its request to be stored (`stored`: found by that id;
 * in `t`'s SQLite file unless told): the recorder stores what reads hand it in turn
 * (src/main/batch/record.ts), so whatever a read before it stores (a read again recording nothing)
 * is stored by then.
 */
export async function storedAfter(
  t: { url: string; dbFile: string },
  upstream: MockUpstream,
  stored: (responseId: string) => boolean | Promise<boolean> = (id) => rows(t as TestServer).some((r) => r.response_id === id),
): Promise<void> {
  const n = ++marks
  const path = `/v1/files/file-mark${n}/content`
  const was = upstream.responder()
  const output = Buffer.from(line(`batch_req_mark${n}`, 'mark', { ...chat, id: `chatcmpl-mark-${n}` }) + '\n')
  upstream.setResponder((req) => (req.url === path ? { headers: { 'content-type': 'application/octet-stream' }, body: output } : was(req)))
  try {
    expect((await request(`${t.url}${path}`, { headers: { authorization: `Bearer ${MARK_KEY}` } })).status).toBe(200)
  } finally {
    upstream.setResponder(was)
  }
  await eventually(async () => ((await stored(`chatcmpl-mark-${n}`)) ? true : undefined))
}

/** The rows other than storedAfter's reads and their requests. */
export const notMarks = (all: any[]) => all.filter((r) => r.api_key_hash !== hashKey(MARK_KEY))

/** A batch's input file: requests, no answers. */
export const INPUT = Buffer.from(
  JSON.stringify({ custom_id: 'task-1', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } }) + '\n',
)

/** Half the list price of the usage (cached tokens as cache reads), at the time the request ran. */
export const batchCost = (model: string, u: { input_tokens: number; output_tokens: number; cache_read_tokens?: number }, ranAt: number) =>
  calcPrice(u as any, model, { providerId: 'openai', timestamp: new Date(ranAt * 1000) })!.total_price / 2

export const EXPECTED = [
  { response_id: chat.id, model: chat.model, endpoint: 'batch.chat.completions', input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353, reasoning_tokens: 0, ts: RAN * 1000,
    cost_usd: batchCost(chat.model, { input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, RAN) },
  { response_id: reasoning.id, model: reasoning.model, endpoint: 'batch.chat.completions', input_tokens: 11, cache_read_tokens: 0, output_tokens: 228, reasoning_tokens: 192, ts: (RAN + 1) * 1000,
    cost_usd: batchCost(reasoning.model, { input_tokens: 11, output_tokens: 228 }, RAN + 1) },
  { response_id: response.id, model: response.model, endpoint: 'batch.responses', input_tokens: 11, cache_read_tokens: 0, output_tokens: 327, reasoning_tokens: 320, ts: (RAN + 2) * 1000,
    cost_usd: batchCost(response.model, { input_tokens: 11, output_tokens: 327 }, RAN + 2) },
]
