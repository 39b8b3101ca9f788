import { codexRefusalError } from '../codex-refusal'
import { refusalErrorOf } from '../lasting-refusal'
import { opencodeFrameHeaders, opencodeRefusal } from '../opencode-refusal'
import type { SteerAsk } from './steers'

/**
 * Reading and writing the Responses API's WebSocket frames (JSON events): what the metering of a
 * socket's calls (./responses-calls.ts) needs of an upstream frame is read without parsing it
 * (its frames are many: a delta each), and a refusal is written as the socket reports errors.
 */

/** The Responses API's terminal events over WebSocket: each ends one response (one call). */
export const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed'])

/**
 * The `type` of an upstream JSON frame, read without parsing it (`{"type":"response.output_text.delta",...}`):
 * the upstream puts it first, and its frames are many. Never for the client's frames (see ./client-frames.ts).
 */
export function frameType(text: string): string {
  const m = /"type"\s*:\s*"([^"\\]{1,100})"/.exec(text.length > 300 ? text.slice(0, 300) : text)
  return m ? m[1] : ''
}

/** The longest lane (`stream_id`) read back from an upstream frame: a longer one names no lane here. */
export const MAX_LANE_CHARS = 200
const LANE_IN_FRAME = new RegExp(`"stream_id"\\s*:\\s*"([^"\\\\]{0,${MAX_LANE_CHARS}})"`)

/**
 * The lane an upstream frame names (`"stream_id":"a"`: OpenAI's WebSocket mode multiplexes
 * responses on one socket, and each event of a response echoes the `stream_id` its
 * `response.create` gave), read without parsing it; null when it names none. A JSON string's
 * quotes are escaped, so text inside a value cannot look like the key.
 */
export function laneOfFrame(text: string): string | null {
  const m = LANE_IN_FRAME.exec(text)
  return m ? m[1] : null
}

/** A response's id in its `response.created` frame (`"response":{"id":"resp_..."`), read without parsing it. */
export function responseIdOf(text: string): string | null {
  const m = /"id"\s*:\s*"(resp_[^"\\]{1,200})"/.exec(text)
  return m ? m[1] : null
}

/**
 * The HTTP status an upstream `error` frame stands for (its `status`, or `status_code`, as the
 * ChatGPT backend names it in a refusal and codex-rs reads it: `#[serde(alias = "status_code")]`),
 * 500 when it names none.
 */
export function errorStatus(text: string): number {
  try {
    const ev = JSON.parse(text)
    const st = ev.status ?? ev.status_code
    if (typeof st === 'number' && st >= 400 && st < 600) return st
  } catch {
    // none
  }
  return 500
}

/**
 * A refusal as the Responses socket reports errors: `{"type":"error","status":...,"error":{...}}`,
 * which Codex turns into the HTTP error it stands for, in the form Codex stops on
 * (../codex-refusal.ts) when `client` is Codex. opencode's openai provider (on the socket with
 * OPENCODE_EXPERIMENTAL_WEBSOCKETS) answers its fetch with the frame's `status`, `headers` and
 * whole text as an HTTP error and retries it as one: it gets the 403 it stops on over HTTP
 * (../opencode-refusal.ts). Any other client gets the contract's error.
 */
export function errorFrame(status: number, body: unknown, headers: Record<string, string>, lane = '', client = ''): string {
  return refusalFrame(status, body, headers, lane, client).frame
}

/** errorFrame's frame and the `status` it carries: the status the client got (opencode's 403 for a lasting refusal). */
export function refusalFrame(status: number, body: unknown, headers: Record<string, string>, lane = '', client = ''): { frame: string; status: number } {
  const oc = client === 'opencode' ? opencodeRefusal(status, body, headers) : undefined
  if (oc) return { frame: inLane({ type: 'error', status: oc.status, error: oc.body.error, headers: opencodeFrameHeaders(headers) }, lane), status: oc.status }
  return { frame: inLane({ type: 'error', status, error: refusalError(status, body, headers, client), headers }, lane), status }
}

/** The `error` of a refusal frame: Codex's form for Codex, else the contract's body's `error`. */
function refusalError(status: number, body: unknown, headers: Record<string, string>, client: string): Record<string, unknown> {
  if (client === 'codex') return codexRefusalError(status, body, headers)
  return refusalErrorOf(body)
}

/** A frame Burnrate writes, with its lane: on a multiplexed socket the client routes each event by it, as the upstream's own. */
function inLane(frame: Record<string, unknown>, lane: string): string {
  return JSON.stringify(lane ? { ...frame, stream_id: lane } : frame)
}

/**
 * A steer refused, as OpenAI answers steering input it will not commit (`response.steer.failed`):
 * the input handed back, so the client can send it with its next `response.create`, and the
 * refusal in Codex's form (to Codex; the contract's to others). With the lane of the response it steers, as OpenAI's own events.
 */
export function steerFailedFrame(status: number, body: unknown, headers: Record<string, string>, steer: SteerAsk, lane = '', client = ''): string {
  return inLane(
    {
      type: 'response.steer.failed',
      status,
      steer: { previous_response_id: steer.previous_response_id, input: steer.input },
      error: refusalError(status, body, headers, client),
      headers,
    },
    lane,
  )
}
