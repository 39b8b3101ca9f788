import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { keepKnown } from './keep-known'
import { loadPriceLibrary } from './library'

// keepKnown looks up, through the download's lists, each model the data in use prices that the
// download lacks: openrouter's list is 700 models, copied by the library on each lookup. It runs
// on the proxy's event loop during an update (and on a first call's way at start).

describe('keeping the prices a download lacks', () => {
  it('lets calls through while it looks the missing models up', async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const lib = await loadPriceLibrary()
    // As a download may be applied: each provider lacking as many models as it may lose, max(3, 10%).
    const next = bundled.map((p) => {
      const lose = Math.max(3, Math.floor(p.models.length * 0.1))
      return { ...p, models: p.models.filter((_, i) => i % Math.max(1, Math.floor(p.models.length / lose)) !== 0) }
    })
    let done = false
    let turns = 0
    const turn = (): void => {
      if (done) return
      turns++
      setImmediate(turn)
    }
    setImmediate(turn)
    const known = await keepKnown(lib, next, bundled, bundled)
    done = true
    expect(known.kept.length).toBeGreaterThan(100)
    // The event loop went round while it ran: each lookup of a provider's whole list blocked it at once before.
    expect(turns).toBeGreaterThan(0)
  })
})
