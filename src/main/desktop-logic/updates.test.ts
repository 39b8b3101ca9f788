import { describe, expect, it } from 'vitest'
import { updatesEnabled } from './updates'

describe('updatesEnabled', () => {
  it('only in a packaged app, unless turned off', () => {
    expect(updatesEnabled({ isPackaged: false, env: {} })).toBe(false)
    expect(updatesEnabled({ isPackaged: true, env: {} })).toBe(true)
    expect(updatesEnabled({ isPackaged: true, env: { BURNRATE_AUTO_UPDATE: '0' } })).toBe(false)
  })
})
