import { EventStreamCodec } from '@smithy/eventstream-codec'
import { EventStreamReader } from '../../src/main/metering/event-stream'

/** AWS's event stream encoder (the AWS SDK's own), for mock Bedrock answers. */
const codec = new EventStreamCodec(
  (b: Uint8Array) => Buffer.from(b).toString('utf8'),
  (s: string) => new Uint8Array(Buffer.from(s, 'utf8')),
)

type Headers = Parameters<typeof codec.encode>[0]['headers']

/** One event stream message with these headers and this payload, as the AWS SDK encodes it. */
export function encodeEventMessage(headers: Headers, payload: string): Buffer {
  return Buffer.from(codec.encode({ headers, body: new Uint8Array(Buffer.from(payload, 'utf8')) }))
}

/** One event stream message as Bedrock sends it: its event type and its JSON payload. */
export function eventMessage(type: string, payload: unknown): Buffer {
  return encodeEventMessage(
    {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    JSON.stringify(payload),
  )
}

/** What Burnrate's reader makes of an event stream fed in these chunks: each message's type and payload. */
export function readEventStream(chunks: Buffer[]): [string, string][] {
  const out: [string, string][] = []
  const r = new EventStreamReader((t, p) => out.push([t, p]))
  for (const c of chunks) r.write(c)
  r.end()
  return out
}

/**
 * A recorded Anthropic SSE stream as Bedrock's InvokeModelWithResponseStream sends it: each
 * event's JSON base64 in a `chunk` message's `bytes`, the last with Bedrock's invocation metrics.
 */
export function bedrockInvokeStream(sse: Buffer): Buffer[] {
  const events = sse
    .toString('utf8')
    .split(/\r?\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5).trim()) as Record<string, unknown>)
  return events.map((e, i) => {
    const ev = i === events.length - 1 ? { ...e, 'amazon-bedrock-invocationMetrics': { inputTokenCount: 1, outputTokenCount: 1, invocationLatency: 10, firstByteLatency: 5 } } : e
    // `p`: the padding Bedrock adds to each chunk.
    return eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev), 'utf8').toString('base64'), p: 'abcdefghij' })
  })
}
