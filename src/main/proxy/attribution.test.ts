import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { keyHint } from '../../shared/key-hint'
import { keyIdentity } from './attribution'

const sha256 = (k: string): string => createHash('sha256').update(k).digest('hex')

describe('keyIdentity', () => {
  it('gives each key its own SHA-256 and hint, however often and in whatever order keys come back', () => {
    // More keys than are kept (256), then the first ones again: evicted, kept and re-used entries alike.
    const keys = Array.from({ length: 600 }, (_, i) => `sk-proj-${String(i).padStart(4, '0')}${'x'.repeat(i % 7)}`)
    const order = [...keys, ...keys.slice(0, 300).reverse(), ...keys.slice(250, 350), keys[599], keys[599], keys[0]]
    for (const k of order) {
      const id = keyIdentity(k)
      expect(id).toEqual({ apiKey: k, apiKeyHash: sha256(k), keyHint: keyHint(k) })
    }
  })

  it('hashes a key as sent: keys differing only in case or a last character are not taken for each other', () => {
    const a = keyIdentity('sk-ant-api03-AAAAAAAAAAAAAAAA')
    const b = keyIdentity('sk-ant-api03-aaaaaaaaaaaaaaaa')
    const c = keyIdentity('sk-ant-api03-AAAAAAAAAAAAAAAB')
    expect(new Set([a.apiKeyHash, b.apiKeyHash, c.apiKeyHash]).size).toBe(3)
    expect(keyIdentity('sk-ant-api03-AAAAAAAAAAAAAAAA').apiKeyHash).toBe(sha256('sk-ant-api03-AAAAAAAAAAAAAAAA'))
  })

  it('hashes a very long key (not kept) and no key at all as before', () => {
    const long = `sk-${'k'.repeat(100_000)}`
    expect(keyIdentity(long)).toEqual({ apiKey: long, apiKeyHash: sha256(long), keyHint: keyHint(long) })
    expect(keyIdentity(long).apiKeyHash).toBe(sha256(long))
    expect(keyIdentity('')).toEqual({ apiKey: '', apiKeyHash: '', keyHint: '' })
  })

  it('gives each call its own object: changing one call\'s does not change the next one\'s', () => {
    const first = keyIdentity('sk-proj-mutated-0000000000')
    first.apiKeyHash = 'changed'
    first.keyHint = 'changed'
    expect(keyIdentity('sk-proj-mutated-0000000000')).toEqual({ apiKey: 'sk-proj-mutated-0000000000', apiKeyHash: sha256('sk-proj-mutated-0000000000'), keyHint: keyHint('sk-proj-mutated-0000000000') })
  })
})
