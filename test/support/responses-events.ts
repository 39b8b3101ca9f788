/**
 * OpenAI Responses API events as a mock upstream sends them over a WebSocket (test/support/ws-upstream.ts),
 * for tests of the relay's metering: a response object, its usage, and the events that begin and end
 * it, each in a lane (`stream_id`) when one is given.
 */

export const usage = (input: number, output: number) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: input + output,
})

export type MockResponse = { id: string; object: 'response'; model: string; status: string }

export const resp = (id: string, model: string): MockResponse => ({ id, object: 'response', model, status: 'in_progress' })

const inLane = (lane?: string) => (lane ? { stream_id: lane } : {})

export const created = (r: MockResponse, lane?: string) => ({ type: 'response.created', ...inLane(lane), response: r })

export const completed = (r: MockResponse, u: ReturnType<typeof usage>, lane?: string) => ({
  type: 'response.completed',
  ...inLane(lane),
  response: { ...r, status: 'completed', usage: u },
})

/** A response ended by a steer, which the server follows with a successor it starts by itself. */
export const steeredAway = (r: MockResponse, u: ReturnType<typeof usage>, lane?: string) => ({
  type: 'response.incomplete',
  ...inLane(lane),
  response: { ...r, status: 'incomplete', incomplete_details: { reason: 'steered' }, usage: u },
})
