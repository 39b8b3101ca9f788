import type WebSocket from 'ws'
import type { ClientVerdict, SocketCalls } from './socket-calls'
import type { SilenceWatch } from './silence'
import type { MessageMemory } from './message-memory'

/**
 * The frames of a relayed WebSocket, passed both ways unchanged (text stays text, binary stays
 * binary), each side paused while the other has too much waiting to be sent. On a Responses
 * socket (`calls`) each JSON frame is shown to its calls on the way: a client's may be answered
 * here instead (a budget refusal) or held while its admission waits, and the upstream's silence
 * is timed (`silence`).
 */

/** Pause a side when this much is waiting to be sent to the other; resume below a quarter of it. */
const HIGH_WATER = 4 * 1024 * 1024

export function relayFrames(client: WebSocket, up: WebSocket, calls: SocketCalls | null, silence: SilenceWatch | null, share: MessageMemory): void {
  // `done`: the message is no longer held here (written, or not sent).
  const pipe = (from: WebSocket, to: WebSocket, mayResume: () => boolean, done?: (data: Buffer) => void) => (data: Buffer, isBinary: boolean) => {
    if (to.readyState !== to.OPEN) return done?.(data)
    to.send(data, { binary: isBinary }, () => {
      done?.(data)
      if (to.bufferedAmount < HIGH_WATER / 4 && from.isPaused && mayResume()) from.resume()
    })
    if (to.bufferedAmount > HIGH_WATER) from.pause()
  }
  // While a call's admission waits on the database (shared budget state), the client's next
  // frames wait behind it, so they reach the upstream in the order they were sent. Past
  // HIGH_WATER of them the client is read no further until the admission is decided: what it
  // sends then waits in its socket (before, every frame was taken in, each up to the body limit,
  // for as long as the database took: a client could fill the memory of the server).
  let held: { data: Buffer; isBinary: boolean }[] | null = null
  let heldBytes = 0
  // A client's message gives back its share of the memory for request bodies once written upstream (./message-memory.ts).
  const toUpstream = pipe(client, up, () => heldBytes <= HIGH_WATER, (data) => share.give(data.length))
  const toClient = pipe(up, client, () => true)
  const fromClient = (data: Buffer, isBinary: boolean): void => {
    if (held) {
      held.push({ data, isBinary })
      heldBytes += data.length
      if (heldBytes > HIGH_WATER && !client.isPaused) client.pause()
      return
    }
    // A binary frame holding a JSON object is read as a text one (a provider may take it as
    // one): a response.create gated, whatever it sends.
    const refused = calls && (!isBinary || jsonObject(data)) ? calls.fromClient(data, isBinary) : null
    if (refused instanceof Promise) {
      held = []
      void refused.then((r) => {
        deliver(data, isBinary, r)
        const next = held ?? []
        held = null
        heldBytes = 0
        for (const f of next) fromClient(f.data, f.isBinary)
        // (Unless a frame among them waits on its own admission, or the upstream holds the client back.)
        if (!held && client.isPaused && up.bufferedAmount <= HIGH_WATER) client.resume()
      })
      return
    }
    deliver(data, isBinary, refused)
  }
  const deliver = (data: Buffer, isBinary: boolean, refused: ClientVerdict) => {
    if (refused === false) return share.give(data.length)
    if (typeof refused === 'object' && refused !== null) {
      share.give(data.length)
      // (The client's close then closes the upstream: ./relay-close.ts.)
      if (client.readyState === client.OPEN) client.close(refused.close, refused.reason)
      return
    }
    if (refused !== null) {
      share.give(data.length)
      if (client.readyState === client.OPEN) client.send(refused)
      return
    }
    toUpstream(data, isBinary)
    // Only the upstream's frames restart the timer: a client's starts it, if it asked for a response.
    silence?.afterClient()
  }
  calls?.attach?.({
    toUpstream: (text) => {
      if (up.readyState === up.OPEN) up.send(text)
    },
    toClient: (text) => {
      if (client.readyState === client.OPEN) client.send(text)
    },
    // (The client's close then closes the upstream: ./relay-close.ts.)
    close: (code, reason) => {
      if (client.readyState === client.OPEN) client.close(code, reason)
    },
  })
  client.on('message', (raw, isBinary) => fromClient(raw as Buffer, isBinary))
  up.on('message', (raw, isBinary) => {
    const data = raw as Buffer
    // A binary frame is metered as a text one when it holds a JSON object.
    if (calls && (!isBinary || jsonObject(data))) calls.fromUpstream(data)
    toClient(data, isBinary)
    silence?.check()
  })
}

/** Whether a frame's bytes begin as a JSON object does (`{` after any JSON whitespace). */
function jsonObject(data: Buffer): boolean {
  for (const b of data) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue
    return b === 0x7b
  }
  return false
}
