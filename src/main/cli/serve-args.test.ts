import { describe, expect, it } from 'vitest'
import { servesDirectly } from './serve-args'

describe('which command lines serve without loading the program', () => {
  it('no arguments, or only the server flags, serve as before', () => {
    expect(servesDirectly([])).toEqual([])
    expect(servesDirectly(['--port', '0', '--data-dir', 'd'])).toEqual(['--port', '0', '--data-dir', 'd'])
    expect(servesDirectly(['serve', '--port', '0'])).toEqual(['--port', '0'])
  })
  it('help, version and every other command go to the program', () => {
    expect(servesDirectly(['--help'])).toBeNull()
    expect(servesDirectly(['-V'])).toBeNull()
    expect(servesDirectly(['serve', '--help'])).toBeNull()
    expect(servesDirectly(['report', 'daily'])).toBeNull()
  })
  it('options before the command: server flags before serve serve, any before another command go to the program', () => {
    expect(servesDirectly(['--port', '8080', 'serve', '--host', '0.0.0.0'])).toEqual(['--port', '8080', '--host', '0.0.0.0'])
    expect(servesDirectly(['--port', '8080', 'serve', '--help'])).toBeNull()
    expect(servesDirectly(['--json', 'status'])).toBeNull()
    expect(servesDirectly(['--data-dir', 'd', 'report', 'daily'])).toBeNull()
    // A server flag's value is not a command: a data folder named "status" is served.
    expect(servesDirectly(['--data-dir', 'status'])).toEqual(['--data-dir', 'status'])
  })
})
