import { describe, expect, it } from 'vitest'
import { inspectGemini } from './gemini'

const PATH = '/v1beta/models/gemini-3.8-flash:generateContent'
const shape = (body: unknown, method = 'POST') => inspectGemini({ method, path: PATH, query: '', headers: {}, body })

describe('a Gemini request that asks for the priority tier', () => {
  it('is a fast call, by its body\'s serviceTier or service_tier, "priority" or SERVICE_TIER_PRIORITY', () => {
    expect(shape({ contents: [], serviceTier: 'priority' }).fast).toBe(true)
    expect(shape({ contents: [], service_tier: 'priority' }).fast).toBe(true)
    expect(shape({ contents: [], serviceTier: 'SERVICE_TIER_PRIORITY' }).fast).toBe(true)
  })

  it('is not for another tier, none, or a request that is not billed', () => {
    expect(shape({ contents: [], serviceTier: 'flex' }).fast).toBeUndefined()
    expect(shape({ contents: [], serviceTier: 'standard' }).fast).toBeUndefined()
    expect(shape({ contents: [] }).fast).toBeUndefined()
    expect(shape(undefined).fast).toBeUndefined()
    expect(shape({ serviceTier: 'priority' }, 'GET').fast).toBeUndefined()
  })
})
