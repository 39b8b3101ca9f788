import { describe, expect, it } from 'vitest'
import { DEFAULT_STATE, parseViewState, serializeViewState } from './url-state'

describe('view state in the URL', () => {
  it('reads range, group and tenant', () => {
    expect(parseViewState('?range=7d&group=agent&tenant=acme')).toEqual({ range: '7d', group: 'agent', tenant: 'acme' })
    expect(parseViewState('?group=member&member=alice')).toEqual({ range: '24h', group: 'member', tenant: '', member: 'alice' })
    expect(serializeViewState({ range: '24h', group: 'model', tenant: '', member: 'bob' })).toBe('?member=bob')
  })
  it('falls back to defaults for missing or bad values', () => {
    expect(parseViewState('')).toEqual(DEFAULT_STATE)
    expect(parseViewState('?range=2w&group=color')).toEqual(DEFAULT_STATE)
  })
  it('writes only what differs from the defaults, keeping other parameters', () => {
    expect(serializeViewState(DEFAULT_STATE)).toBe('')
    expect(serializeViewState({ range: '1h', group: 'model', tenant: '' }, '?x=1&range=7d')).toBe('?x=1&range=1h')
    expect(serializeViewState({ range: '24h', group: 'session', tenant: 'a b&c' })).toBe('?group=session&tenant=a+b%26c')
  })
  it('round-trips', () => {
    const s = { range: '30m', group: 'api_key', tenant: 'team/α' } as const
    expect(parseViewState(serializeViewState(s))).toEqual(s)
  })
})
