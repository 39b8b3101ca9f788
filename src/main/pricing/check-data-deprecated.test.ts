import type { Provider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { charged, refuseReason } from './check-data'
import { loadPriceLibrary } from './library'

const lib = await loadPriceLibrary()
const bundled = JSON.parse(JSON.stringify((await lib.waitForUpdate()) ?? [])) as Provider[]
const withModels = (data: Provider[], id: string, change: (models: Provider['models']) => Provider['models']) =>
  data.map((p) => (p.id === id ? { ...p, models: change(p.models) } : p))
const deprecateAll = (models: Provider['models']) => models.map((m) => ({ ...m, deprecated: true }))

/**
 * The check of a download skipped the models the data in use marks deprecated: one download could
 * mark all of a provider's models deprecated (nothing lost), and the next drop them all (none of the
 * models it counted lost), leaving the provider's calls unpriced. Each step is now refused as a
 * broken download; upstream retiring a provider's deprecated models, or deprecating a few, is not.
 */
describe('a download that deprecates or drops all of a provider\'s models', () => {
  it('is refused when it newly marks every model a provider charges for deprecated', () => {
    expect(refuseReason(lib, withModels(bundled, 'anthropic', deprecateAll), bundled)).toMatch(/anthropic/)
  })

  it('is refused when it drops every model of a provider whose models are all deprecated in the data in use', () => {
    const current = withModels(bundled, 'anthropic', deprecateAll)
    expect(refuseReason(lib, withModels(bundled, 'anthropic', () => []), current)).toMatch(/anthropic/)
    // Cerebras (some of its models deprecated in the bundled data) with all of them deprecated, then dropped.
    expect(bundled.find((p) => p.id === 'cerebras')!.models.filter(charged).length).toBeGreaterThan(0)
    expect(refuseReason(lib, withModels(bundled, 'cerebras', () => []), withModels(bundled, 'cerebras', deprecateAll))).toMatch(/cerebras/)
  })

  it('is applied when it retires a provider\'s deprecated models, or deprecates a few', () => {
    expect(refuseReason(lib, withModels(bundled, 'cerebras', (ms) => ms.filter((m) => !m.deprecated)), bundled)).toBeNull()
    expect(refuseReason(lib, withModels(bundled, 'anthropic', (ms) => ms.map((m, i) => (i < 2 ? { ...m, deprecated: true } : m))), bundled)).toBeNull()
  })
})
