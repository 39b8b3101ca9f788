import type { serverOverMockUpstream } from '../support/server'

/** What the cut-JSON estimate tests share: an upstream that sends part of a JSON answer, then resets. */
export function cutBodies(s: ReturnType<typeof serverOverMockUpstream>) {
  return {
    /** The upstream sends `body` up to `at` (a byte offset), then resets the connection. */
    sendsThenResets(body: Buffer, at: number, ctype = 'application/json'): void {
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': ctype }, chunks: [body.subarray(0, at), Buffer.from(''), body.subarray(at)], resetAfterChunks: 2, delayMs: 5 }))
    },
  }
}

/** The offset just past `share` of the string value that follows `"key":` in `body`. */
export function into(body: Buffer, key: string, share: number): number {
  const start = body.indexOf(`"${key}"`)
  const open = body.indexOf('"', body.indexOf(':', start)) + 1
  const close = body.indexOf('",', open)
  return open + Math.floor((close - open) * share)
}
