import { findProvider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { hasProviderName, providerName } from '../../shared/provider-names'
import { PROVIDER_NAMES, PROVIDERS } from './registry'

describe('provider registry', () => {
  it('names and mounts are unique, and no mount hides another', () => {
    expect(new Set(PROVIDER_NAMES).size).toBe(PROVIDERS.length)
    const mounts = PROVIDERS.map((p) => p.mount)
    expect(new Set(mounts).size).toBe(mounts.length)
    for (const m of mounts) {
      expect(m).toMatch(/^\/[a-z0-9-]+(\/v1)?$/)
      // The router's bare aliases (/v1, /v1beta, /v1alpha) are never a provider mount.
      expect(m.startsWith('/v1')).toBe(false)
    }
  })

  it('every provider is priced by a provider genai-prices knows', () => {
    for (const p of PROVIDERS) expect(findProvider({ providerId: p.pricingId })?.id, p.name).toBe(p.pricingId)
  })

  it('default base URLs are https; only Azure and Microsoft Foundry (each resource has its own), Vertex AI (each location) and Bedrock (each region) have none', () => {
    for (const p of PROVIDERS) {
      if (p.name === 'azure' || p.name === 'foundry' || p.name === 'vertex' || p.name === 'bedrock') expect(p.defaultBaseUrl).toBeNull()
      else expect(new URL(p.defaultBaseUrl!).protocol, p.name).toBe('https:')
    }
    // Where a path names its upstream: Vertex AI's location, Bedrock's region, Perplexity's Agent API (under /v1).
    expect(PROVIDERS.filter((p) => p.place).map((p) => p.name).sort()).toEqual(['bedrock', 'perplexity', 'vertex'])
  })

  it("every provider has the name the dashboard shows it by, and an id it does not know is shown as it is", () => {
    for (const p of PROVIDERS) expect(hasProviderName(p.name), p.name).toBe(true)
    expect(providerName('foundry')).toBe('Microsoft Foundry')
    expect(providerName('code-assist')).toBe('Gemini Code Assist')
    expect(providerName('a-newer-provider')).toBe('a-newer-provider')
    expect(providerName('constructor')).toBe('constructor')
  })
})
