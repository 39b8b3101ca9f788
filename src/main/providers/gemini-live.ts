import { isObject, parseObject, type Usage } from '../metering/usage'
import { geminiUsage } from './gemini'
import type { Meter, MeterResult } from './types'

/**
 * Gemini's Live API (`wss://…/ws/google.ai.generativelanguage.<v1beta|v1alpha>.GenerativeService.
 * BidiGenerateContent`, or `BidiGenerateContentConstrained` with an ephemeral token): a socket whose
 * turns are its calls (../proxy/ws/gemini-live-calls.ts), each billed by the `usageMetadata` its
 * server messages carry: that turn's own (the prompt being the session's conversation so far), not
 * a running total of the session's.
 */
/** The model a client's `setup` message names (`models/gemini-…` as the bare name), '' for none. */
export function setupModel(frame: unknown): string {
  if (!isObject(frame) || !isObject(frame.setup)) return ''
  const m = frame.setup.model
  return typeof m === 'string' ? m.replace(/^models\//, '') : ''
}

/**
 * A Live `usageMetadata` as a Gemini call's: the Live API names the output `responseTokenCount`
 * and `responseTokensDetails` where generateContent says `candidates…`; the rest (cached and
 * tool-use prompt, thoughts, the prompt's modalities) is read as generateContent's is.
 */
export function liveUsage(m: unknown): Usage | null {
  if (!isObject(m)) return null
  return geminiUsage({ ...m, candidatesTokenCount: m.responseTokenCount, candidatesTokensDetails: m.responseTokensDetails })
}

/** Meters one Live turn from the `usageMetadata` of its server messages: the last one read is its bill. */
export class GeminiLiveMeter implements Meter {
  private usage: Usage | null = null
  private complete = false
  /** Cut before its `turnComplete`: what usage it reported (if any) is the least it was billed. */
  private cut = false

  /** A server message's `usageMetadata` (a JSON text). */
  usageFrom(message: Record<string, unknown>): boolean {
    const u = liveUsage(message.usageMetadata)
    if (u) this.usage = u
    return u !== null
  }

  /** The turn's `turnComplete` was read. */
  completed(): void {
    this.complete = true
  }

  hasUsage(): boolean {
    return this.usage !== null
  }

  /** Cut before its `turnComplete` (the socket closed, or the upstream went silent). */
  cutShort(): void {
    if (!this.complete) this.cut = true
  }

  event(_name: string, data: string): void {
    const m = parseObject(data)
    if (m) this.usageFrom(m)
  }

  json(): void {}

  result(): MeterResult {
    if (this.cut) return { usage: this.usage, complete: false, outputText: '', partialOutput: true }
    return { usage: this.usage, complete: this.complete }
  }
}
