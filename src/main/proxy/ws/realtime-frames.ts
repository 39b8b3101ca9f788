import type { IncomingHttpHeaders } from 'node:http'
import { isObject } from '../../metering/usage'
import { keyIdentity } from '../attribution'
import type { CallContext } from '../gate'
import { errorStatus } from './frames'

/**
 * Reading and writing the Realtime API's frames (JSON events) for its calls (./realtime-calls.ts):
 * the model a session runs and transcribes with, an upstream `error` event, and a refusal written
 * as the Realtime API reports errors.
 */

/**
 * The query parameters that name a Realtime upgrade's model: its `model` (OpenAI, xAI, Azure's v1
 * API, where it is the deployment), and on Azure OpenAI its preview API's `deployment`
 * (`/openai/realtime?api-version=…&deployment=…`), read first there.
 */
export function modelParams(provider: string): readonly string[] {
  return provider === 'azure' ? ['deployment', 'model'] : ['model']
}

/** The model a Realtime upgrade asks for (its `model` query, or Azure's `deployment`: `modelParams`), '' when none. */
export function modelOfQuery(query: string, provider = 'openai'): string {
  if (!query) return ''
  const q = new URLSearchParams(query)
  for (const k of modelParams(provider)) {
    const v = q.get(k)
    if (v) return v
  }
  return ''
}

/** How a browser, which cannot set headers on a WebSocket, gives the Realtime API its key: a subprotocol it offers. */
const PROTOCOL_KEY = 'openai-insecure-api-key.'

/** The keys a browser offers as subprotocols (`openai-insecure-api-key.<key>`), in its order; none for none. */
export function offeredKeys(headers: IncomingHttpHeaders): string[] {
  const offer = headers['sec-websocket-protocol']
  if (typeof offer !== 'string' || !offer.includes(PROTOCOL_KEY)) return []
  const keys: string[] = []
  for (const p of offer.split(',')) {
    const v = p.trim()
    if (v.startsWith(PROTOCOL_KEY) && v.length > PROTOCOL_KEY.length && !keys.includes(v.slice(PROTOCOL_KEY.length))) keys.push(v.slice(PROTOCOL_KEY.length))
  }
  return keys
}

/**
 * The upgrade's headers as its calls are attributed by: with the key a browser offers as a
 * subprotocol (`Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.<key>`, OpenAI's way for
 * a client that cannot set headers) as its `Authorization` when it has none, so the socket's calls
 * are the key's (its budgets, its rows) rather than no key's. In memory only, as any key.
 */
export function withProtocolKey(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  if (headers.authorization) return headers
  const [key] = offeredKeys(headers)
  return key ? { ...headers, authorization: `Bearer ${key}` } : headers
}

/**
 * A call whose upgrade offers keys as subprotocols beside the one it is recorded under (its
 * `Authorization`, or the first offered): all go upstream, so all are its credentials, and the
 * budgets admit it only when each is (as a decoy in another header cannot stand in for a blocked
 * key on an HTTP call).
 */
export function addOfferedKeys(ctx: CallContext, keys: readonly string[]): void {
  for (const key of keys) {
    if (!key || key === ctx.apiKey || ctx.credentials?.some((c) => c.apiKey === key)) continue
    ctx.credentials = [...(ctx.credentials ?? [keyIdentity(ctx.apiKey)]), keyIdentity(key)]
  }
}

/**
 * The models a `session.created` or `session.updated` event's session names: the one it runs
 * (`model`), and the one its input audio is transcribed with ('' for none: transcription off),
 * where the GA interface puts it (`audio.input.transcription`) or the beta one
 * (`input_audio_transcription`). Undefined where the session does not say.
 */
export function sessionModels(session: unknown): { model?: string; transcriber?: string } {
  if (!isObject(session)) return {}
  const out: { model?: string; transcriber?: string } = {}
  if (typeof session.model === 'string' && session.model) out.model = session.model
  const input = isObject(session.audio) && isObject(session.audio.input) ? session.audio.input : null
  const t = input && 'transcription' in input ? input.transcription : 'input_audio_transcription' in session ? session.input_audio_transcription : undefined
  if (t === null) out.transcriber = ''
  else if (isObject(t)) out.transcriber = typeof t.model === 'string' ? t.model : ''
  return out
}

/**
 * An upstream `error` event: the client event it answers (`error.event_id`: null when the client
 * gave its event no id), and the HTTP status it stands for (an `invalid_request_error` is a 400,
 * a rate limit or a quota a 429; else the event's `status`, or 500).
 */
export function realtimeError(ev: Record<string, any>, text: string): { eventId: string | null; status: number; code: string } {
  const e = isObject(ev.error) ? ev.error : {}
  const type = typeof e.type === 'string' ? e.type : ''
  const code = typeof e.code === 'string' && e.code ? e.code : type
  const status = /rate_limit|quota/.test(`${type} ${code}`) ? 429 : type === 'invalid_request_error' ? 400 : errorStatus(text)
  return { eventId: typeof e.event_id === 'string' && e.event_id ? e.event_id : null, status, code: code.slice(0, 100) }
}

let refusals = 0

/**
 * A refusal as the Realtime API reports errors, `{"type":"error","event_id":…,"error":{"type",
 * "code","message","param","event_id"}}`, naming the client's event it refuses (its `event_id`, if
 * it gave one), with the HTTP status it stands for beside it.
 */
export function realtimeErrorFrame(status: number, body: unknown, clientEventId: string | null): string {
  const error = { ...((body as { error?: Record<string, unknown> } | undefined)?.error ?? {}) }
  return JSON.stringify({
    type: 'error',
    event_id: `event_burnrate_${++refusals}`,
    status,
    error: { ...error, code: error.code ?? error.type, param: null, event_id: clientEventId },
  })
}
