import { EventStreamCodec } from '@smithy/eventstream-codec'

/** AWS's event stream encoder (the AWS SDK's own), for mock Bedrock answers. */
const codec = new EventStreamCodec(
  (b: Uint8Array) => Buffer.from(b).toString('utf8'),
  (s: string) => new Uint8Array(Buffer.from(s, 'utf8')),
)

/** One event stream message as Bedrock sends it: its event type and its JSON payload. */
export function eventMessage(type: string, payload: unknown): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'event' },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify(payload), 'utf8')),
    }),
  )
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
    return eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev), 'utf8').toString('base64'), p: 'abcdefghij' })
  })
}
