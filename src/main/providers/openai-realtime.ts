import { OutputText } from '../metering/output-text'
import { emptyUsage, isObject, parseObject, type Usage } from '../metering/usage'
import { openaiUsage } from './openai-usage'
import type { Meter, MeterResult } from './types'

/**
 * The Realtime API's billed events (a socket's calls: ../proxy/ws/realtime-calls.ts): a response's
 * `response.done`, whose `usage` is the whole response's (its prompt is the session's conversation,
 * by modality: text, audio, image, and the cached part of each; its output text and audio), and
 * an input transcription's `conversation.item.input_audio_transcription.completed`, billed at the
 * transcription model's rates (its `usage`: tokens, or whisper-1's seconds of audio).
 */
export const RESPONSE_DONE = 'response.done'
export const TRANSCRIBED = 'conversation.item.input_audio_transcription.completed'

/** Meters one Realtime call from its billed event; every other event is not its business. */
export class RealtimeMeter implements Meter {
  private usage: Usage | null = null
  private id: string | undefined
  private complete = false
  private failure: string | null = null
  /** Cut before its `response.done`: `usage` is its prompt's least, its output unknown. */
  private cut = false
  /** Its `response.done` came after the client had closed the socket: billed, never delivered. */
  private undelivered = false
  /** Its `response.done` reported no usage: the text it produced (text, transcripts, a call's arguments), its output's estimate. */
  private produced: OutputText | null = null

  /**
   * `readUsage`: how the provider's usage is read (OpenAI's and Azure's, the default; xAI's carries
   * its charge: ./xai.ts). `byTime`: the provider bills the session by its minutes, not its tokens
   * (xAI's voice agent): the usage is marked so (`billed_by_time`), recorded exactly and unpriced
   * unless it reports its charge.
   */
  constructor(
    private readonly readUsage: (raw: unknown) => Usage | null = openaiUsage,
    private readonly byTime = false,
  ) {}

  event(name: string, data: string): void {
    if (name !== RESPONSE_DONE && name !== TRANSCRIBED) return
    const ev = parseObject(data)
    if (!ev) return
    this.complete = true
    if (name === TRANSCRIBED) {
      this.usage = this.readUsage(ev.usage)
      return
    }
    const r = ev.response
    if (!isObject(r)) return
    if (typeof r.id === 'string' && r.id) this.id = r.id
    this.usage = this.readUsage(r.usage)
    // A failed response's error (a quota, a server error) is the call's; it bills what it reports.
    if (r.status === 'failed') {
      const e = isObject(r.status_details) ? r.status_details.error : undefined
      this.failure = (isObject(e) && typeof e.code === 'string' && e.code ? e.code : isObject(e) && typeof e.type === 'string' && e.type ? e.type : 'response_failed').slice(0, 100)
    }
    if (this.usage) return
    // Ended, however it ended (cancelled by the client or by the user's speech), without saying what
    // it cost: OpenAI bills what it generated all the same, estimated from what it produced (see
    // `unreportedAfter`). A failed one that produced nothing is a refusal (a quota): $0, as reported.
    const output = Array.isArray(r.output) ? r.output : []
    if (r.status === 'failed' && output.length === 0) this.usage = emptyUsage()
    else this.produced = producedText(output)
  }

  /**
   * After its `response.done`: one that reported no usage is estimated as a response cut before
   * its `response.done` is, its prompt at least the conversation of the session's last response
   * that ended (`last`; none: the recorder's estimate from the call's body), its output from the
   * text it produced.
   */
  unreportedAfter(last: Usage | null): void {
    if (this.produced) this.usage = last ? conversationSoFar(last) : null
  }

  json(): void {}

  /**
   * The response was cut before its `response.done` (the socket closed, or the upstream went
   * silent): OpenAI bills what it generated all the same, and no event says how much. Its prompt
   * is at least the conversation of the session's last response that ended (`last`): recorded so,
   * estimated, its output estimated from nothing that streamed (0). Without one, the recorder's
   * estimate from the call's body.
   */
  cutAfter(last: Usage | null): void {
    if (this.complete || !last) return
    this.usage = conversationSoFar(last)
    this.cut = true
  }

  /**
   * Its `response.done` is read after the client closed the socket (../proxy/ws/realtime-calls.ts):
   * the usage is OpenAI's bill, but the client never had the response's end, so the call keeps
   * its 499 (not complete: the recorder would give it the upstream's 200).
   */
  leftBeforeDone(): void {
    this.undelivered = true
  }

  result(): MeterResult {
    const r = this.counted()
    if (!this.byTime) return r
    // Billed by the minute: its tokens, counted or estimated, are not its bill.
    if (r.usage) r.usage.billed_by_time = true
    else r.billedSoFar = { billed_by_time: true }
    return r
  }

  private counted(): MeterResult {
    if (this.cut) return { usage: this.usage, complete: false, outputText: '', partialOutput: true }
    if (this.produced) {
      const p = this.produced
      return { usage: this.usage, responseId: this.id, complete: this.complete && !this.undelivered, error: this.failure ?? undefined, outputText: p.join(), outputScale: p.scale, partialOutput: true }
    }
    return { usage: this.usage, responseId: this.id, complete: this.complete && !this.undelivered, error: this.failure ?? undefined }
  }
}

/**
 * The conversation after a response whose usage is `u`, as the next response's prompt holds it:
 * that prompt and that output (audio as audio), as much of it read from the cache as that prompt
 * was (by modality), the rest uncached, as the budgets reserve a continued Responses turn.
 */
export function conversationSoFar(u: Usage): Usage {
  const x = u.extra ?? {}
  const out = emptyUsage()
  out.input_tokens = u.input_tokens + u.output_tokens
  out.cache_read_tokens = u.cache_read_tokens
  const extra: Record<string, number> = {}
  const audio = (x.input_audio_tokens ?? 0) + (x.output_audio_tokens ?? 0)
  if (audio > 0) extra.input_audio_tokens = audio
  for (const k of ['input_image_tokens', 'cache_audio_read_tokens', 'cache_image_read_tokens']) if (x[k] > 0) extra[k] = x[k]
  if (Object.keys(extra).length > 0) out.extra = extra
  return out
}

/**
 * The text a response's output items hold: a message's text and its audio's transcript, a function
 * call's arguments (what the model generated, short of the audio itself).
 */
function producedText(output: unknown[]): OutputText {
  const text = new OutputText()
  for (const item of output) {
    if (!isObject(item)) continue
    if (typeof item.arguments === 'string') text.push(item.arguments)
    if (!Array.isArray(item.content)) continue
    for (const part of item.content) {
      if (!isObject(part)) continue
      if (typeof part.text === 'string') text.push(part.text)
      if (typeof part.transcript === 'string') text.push(part.transcript)
    }
  }
  return text
}
