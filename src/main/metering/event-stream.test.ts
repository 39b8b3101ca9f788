import { describe, expect, it } from 'vitest'
import { encodeEventMessage, readEventStream as read } from '../../../test/support/event-stream'
import { EventStreamReader } from './event-stream'

/** A message as AWS encodes it (the AWS SDK's own encoder), with the headers Bedrock sends and some it does not. */
function message(type: string, payload: string, messageType = 'event'): Buffer {
  const headers: Record<string, any> = {
    ':event-type': { type: 'string', value: type },
    ':content-type': { type: 'string', value: 'application/json' },
    ':message-type': { type: 'string', value: messageType },
    flag: { type: 'boolean', value: true },
    n: { type: 'integer', value: 7 },
    raw: { type: 'binary', value: new Uint8Array([1, 2, 3]) },
  }
  if (messageType === 'exception') {
    delete headers[':event-type']
    headers[':exception-type'] = { type: 'string', value: type }
  }
  return encodeEventMessage(headers, payload)
}

describe('EventStreamReader', () => {
  const stream = Buffer.concat([message('chunk', '{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9"}'), message('chunk', '{"bytes":"ö€"}'), message('metadata', '{"usage":{"inputTokens":3}}')])
  const want = [
    ['chunk', '{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9"}'],
    ['chunk', '{"bytes":"ö€"}'],
    ['metadata', '{"usage":{"inputTokens":3}}'],
  ]

  it('reads every message of a stream, whole or split at every byte', () => {
    expect(read([stream])).toEqual(want)
    for (let cut = 1; cut < stream.length; cut++) expect(read([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(want)
    expect(read([...stream].map((b) => Buffer.from([b])))).toEqual(want)
  })

  it('names an exception by its type, and skips a message whose checksum fails', () => {
    expect(read([message('throttlingException', '{"message":"slow down"}', 'exception')])).toEqual([['exception:throttlingException', '{"message":"slow down"}']])
    const bad = Buffer.from(stream)
    const first = bad.readUInt32BE(0)
    bad[first - 6] ^= 0xff // the first message's payload
    expect(read([bad])).toEqual(want.slice(1))
  })

  it('stops at a corrupt prelude, and keeps nothing of a message cut short', () => {
    const bad = Buffer.from(stream)
    bad[2] ^= 0x01
    const r = new EventStreamReader(() => {
      throw new Error('no message expected')
    })
    r.write(bad)
    expect(r.failed).toBe(true)
    expect(read([stream.subarray(0, stream.length - 1)])).toEqual(want.slice(0, 2))
  })

  it('skips a message larger than its limit without holding it', () => {
    const max = EventStreamReader.MAX_MESSAGE
    EventStreamReader.MAX_MESSAGE = 300
    try {
      const big = message('chunk', 'x'.repeat(1000))
      expect(read([big, stream])).toEqual(want)
      expect(read([big.subarray(0, 50), big.subarray(50, 700), Buffer.concat([big.subarray(700), stream])])).toEqual(want)
    } finally {
      EventStreamReader.MAX_MESSAGE = max
    }
  })
})
