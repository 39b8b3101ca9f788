import { describe, expect, it } from 'vitest'
import { BodyMemory } from '../call/request-body'
import { MessageMemory } from './message-memory'

/** A masked client frame (RFC 6455 5.2) of `payload` bytes with opcode `op`, FIN set unless `fin` is false. */
function frame(payload: number, op = 0x1, fin = true): Buffer {
  const ext = payload < 126 ? Buffer.alloc(0) : payload < 65536 ? Buffer.alloc(2) : Buffer.alloc(8)
  if (ext.length === 2) ext.writeUInt16BE(payload)
  if (ext.length === 8) ext.writeUInt32BE(payload, 4)
  const len = payload < 126 ? payload : payload < 65536 ? 126 : 127
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | op, 0x80 | len]), ext, Buffer.alloc(4), Buffer.alloc(payload)])
}

describe('MessageMemory', () => {
  it('takes each data frame as its header announces it, wherever the chunks split it, and not control frames', () => {
    const memory = new BodyMemory(1_000_000)
    const m = new MessageMemory(memory, 1_000_000, () => {})
    const bytes = Buffer.concat([frame(100, 0x1, false), frame(9, 0x9), frame(70_000, 0x0, true), frame(300, 0x2)])
    // One byte at a time: every header split across chunks.
    for (let i = 0; i < 20; i++) m.read(bytes.subarray(i, i + 1))
    m.read(bytes.subarray(20))
    expect(memory.held).toBe(100 + 70_000 + 300)
    m.give(70_100)
    expect(memory.held).toBe(300)
    m.end()
    expect(memory.held).toBe(0)
    // What the socket gave back at its end is not given again.
    m.give(300)
    expect(memory.held).toBe(0)
  })

  it('refuses a frame that finds no room, once, and counts no further', () => {
    const memory = new BodyMemory(1000)
    let refused = 0
    const m = new MessageMemory(memory, 1_000_000, () => refused++)
    m.read(Buffer.concat([frame(600), frame(600), frame(100)]))
    expect(refused).toBe(1)
    expect(memory.held).toBe(600)
    m.end()
    expect(memory.held).toBe(0)
  })

  it('leaves a frame past the message limit to the ws library (which refuses it 1009): nothing taken', () => {
    const memory = new BodyMemory(10_000_000)
    let refused = 0
    const m = new MessageMemory(memory, 1000, () => refused++)
    m.read(frame(2000))
    expect(refused).toBe(0)
    expect(memory.held).toBe(0)
  })
})
