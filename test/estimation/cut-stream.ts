import { postJson } from '../support/http'
import type { serverOverMockUpstream } from '../support/server'

/**
 * What the cut-stream estimate tests share: a text of known size, and an upstream that streams
 * some events and then resets the connection (the stream is cut before its usage).
 */

/** ~2,000 tokens of prose in any BPE tokenizer (9 words + '.' a sentence, 200 sentences). */
export const PROSE = 'The quick brown fox jumps over the lazy dog again. '.repeat(200)
/** Pieces of PROSE, as a stream's deltas carry it. */
export const PIECES = PROSE.match(/.{1,50}/gs)!
/** Well below the tokens of PROSE in any tokenizer (it is ~2,000), well above what is recorded when it is left out. */
export const AT_LEAST = 1_000

/** One server-sent event. */
export const sse = (ev: object, name?: string) => Buffer.from(`${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(ev)}\n\n`)

export function cutStreams(s: ReturnType<typeof serverOverMockUpstream>) {
  return {
    /** The upstream answers 200, sends `chunks`, then resets the connection. */
    streamsThenResets(chunks: Buffer[], ctype = 'text/event-stream'): void {
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': ctype }, chunks: [...chunks, Buffer.from('')], resetAfterChunks: chunks.length, delayMs: 1 }))
    },
    /** POSTs and tolerates the reset (the client sees its connection end). */
    post: (path: string, body: unknown, headers: Record<string, string>) => postJson(`${s.t.url}${path}`, body, headers).catch(() => undefined),
  }
}
