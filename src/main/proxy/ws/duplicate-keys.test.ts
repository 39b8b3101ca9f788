import { describe, expect, it } from 'vitest'
import { duplicatedKey, watched } from './duplicate-keys'

describe('duplicatedKey', () => {
  it('finds a key named twice at the top level, however it is spelled or spaced', () => {
    expect(duplicatedKey('{"type":"a","type":"response.create"}')).toBe('type')
    expect(duplicatedKey('{ "type" : "a" ,\n "model":1, "type":"b" }')).toBe('type')
    expect(duplicatedKey('{"type":"a","typ\\u0065":"b"}')).toBe('type')
    expect(duplicatedKey('{"model":"a","input":[{"type":"x","model":"y"}],"model":"b"}')).toBe('model')
    expect(duplicatedKey('{"type":"x","extra":{"a":[1,{"b":"}]\\""}]},"stream_id":"a","stream_id":"b"}')).toBe('stream_id')
  })

  it('reads keys inside values, strings that hold a key, and escaped quotes as no duplicate', () => {
    expect(duplicatedKey('{"type":"response.create","input":[{"type":"message","content":[{"type":"input_text","text":"\\"type\\":\\"x\\""}]}]}')).toBeNull()
    expect(duplicatedKey('{"type":"a","text":"say \\"type\\" twice: \\"type\\"","n":-1.5e3,"b":true,"c":null}')).toBeNull()
    expect(duplicatedKey('{"type":"a","v":"\\\\","w":"\\u00e9"}')).toBeNull()
    expect(duplicatedKey('[{"type":"a"},{"type":"b"}]')).toBeNull()
    expect(duplicatedKey('{}')).toBeNull()
    // A key no budget or meter reads, named twice: nothing to read another value of.
    expect(duplicatedKey('{"type":"response.create","input":[{"type":"message"}],"foo":1,"foo":2}')).toBeNull()
  })

  it('looks one object deeper when asked (a Gemini Live setup), and no deeper', () => {
    const keys = watched(['setup', 'model'])
    expect(duplicatedKey('{"setup":{"model":"a","tools":[{"model":1}],"model":"b"}}', keys, 2)).toBe('model')
    expect(duplicatedKey('{"setup":{"model":"a"},"setup":{"model":"b"}}', keys, 2)).toBe('setup')
    expect(duplicatedKey('{"setup":{"model":"a","config":{"model":"x","model":"y"}}}', keys, 2)).toBeNull()
    expect(duplicatedKey('{"setup":{"model":"a","tools":[{"model":1},{"model":2}]}}', keys, 2)).toBeNull()
    expect(duplicatedKey('{"setup":{"model":"a","tools":[{"model":1},{"model":2}]}}', keys, 1)).toBeNull()
  })
})
