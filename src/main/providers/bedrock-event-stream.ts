/**
 * What Bedrock puts in the messages of its event streams (InvokeModel's and Converse's
 * `…-stream` answers), as ../metering/event-stream.ts hands them over (each message's type and
 * payload text): an exception message that ends a 200's stream, and InvokeModel's `chunk`
 * message, which carries one of the model's own events, base64 in its `bytes`.
 */

/**
 * The type of an exception message in a 200's event stream (`throttlingException`,
 * `serviceUnavailableException`, `modelStreamErrorException`, …: the event stream reader names it
 * `exception:<type>`), or undefined for an event. It ends the stream. Sent before the model's first
 * event, nothing was generated or billed: the call costs nothing, with the error recorded, as an
 * Anthropic stream's `error` event before `message_start`. Sent later, what streamed is
 * estimated as for a stream cut there, and the error is recorded too.
 */
export function exceptionType(type: string): string | undefined {
  return type.startsWith('exception:') ? type.slice('exception:'.length) || 'exception' : undefined
}

/** The model's event a `chunk` message carries (its `bytes`, decoded), or undefined when it carries none. */
export function chunkEvent(payload: string): string | undefined {
  let bytes: unknown
  try {
    bytes = (JSON.parse(payload) as { bytes?: unknown }).bytes
  } catch {
    return undefined
  }
  if (typeof bytes !== 'string') return undefined
  return Buffer.from(bytes, 'base64').toString('utf8')
}
