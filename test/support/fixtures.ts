import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The recorded provider responses in `test/fixtures` (their token counts: test/fixtures/README.md), or BURNRATE_FIXTURES. */
export const FIXTURES_DIR = process.env.BURNRATE_FIXTURES
  ? resolve(process.env.BURNRATE_FIXTURES)
  : resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures')

/** A recorded body; a missing one fails at once with one line naming the file, never a time-out. */
export function fixture(path: string): Buffer {
  const file = join(FIXTURES_DIR, path)
  if (!existsSync(file)) throw new Error(`missing test fixture ${file} (the recorded payloads live in test/fixtures)`)
  return readFileSync(file)
}

export function fixtureJson(path: string): any {
  return JSON.parse(fixture(path).toString('utf8'))
}

export function fixtureFiles(dir: string): string[] {
  const folder = join(FIXTURES_DIR, dir)
  if (!existsSync(folder)) throw new Error(`missing test fixture folder ${folder} (the recorded payloads live in test/fixtures)`)
  return readdirSync(folder).map((f) => `${dir}/${f}`)
}

/**
 * Splits an SSE body into the chunks a real server would flush: one per event, each cut
 * at an arbitrary byte (inside JSON, inside a multi-byte character) to test reassembly.
 */
export function sseChunks(body: Buffer, splitInside = true): Buffer[] {
  const text = body.toString('latin1')
  const sep = text.includes('\r\n\r\n') ? '\r\n\r\n' : '\n\n'
  const out: Buffer[] = []
  let start = 0
  for (;;) {
    const i = text.indexOf(sep, start)
    const end = i === -1 ? text.length : i + sep.length
    if (end <= start) break
    const piece = body.subarray(start, end)
    if (splitInside && piece.length > 8) {
      const cut = Math.floor(piece.length / 2) + 1
      out.push(piece.subarray(0, cut), piece.subarray(cut))
    } else out.push(piece)
    start = end
    if (i === -1) break
  }
  return out
}

/**
 * A Messages API stream as Anthropic sends it: `message_start` with `message` (its id, model and
 * `usage`, the prompt side), one text block, then `message_delta` with the final `output_tokens`.
 */
export function anthropicStream(message: { id: string; model: string; usage: object }, outputTokens: number, text = 'Hello.'): string {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  return (
    event('message_start', { message: { type: 'message', role: 'assistant', content: [], stop_reason: null, stop_sequence: null, ...message } }) +
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }) +
    event('content_block_stop', { index: 0 }) +
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: outputTokens } }) +
    event('message_stop', {})
  )
}
