import { describe, expect, it } from 'vitest'
import { updatesEnabled } from './updates'

describe('updatesEnabled', () => {
  it('only in a packaged app, unless turned off', () => {
    expect(updatesEnabled({ isPackaged: false, env: {} })).toBe(false)
    expect(updatesEnabled({ isPackaged: true, env: {} })).toBe(true)
    expect(updatesEnabled({ isPackaged: true, env: { BURNRATE_AUTO_UPDATE: '0' } })).toBe(false)
  })

  it('is off for every usual spelling of off (false, as BURNRATE_PRICE_AUTO_UPDATE takes it), on otherwise', () => {
    for (const off of ['0', 'false', 'FALSE', 'False', 'no', 'off', ' 0 ']) {
      expect(updatesEnabled({ isPackaged: true, env: { BURNRATE_AUTO_UPDATE: off } }), off).toBe(false)
    }
    for (const on of ['1', 'true', '']) expect(updatesEnabled({ isPackaged: true, env: { BURNRATE_AUTO_UPDATE: on } }), on).toBe(true)
  })
})
