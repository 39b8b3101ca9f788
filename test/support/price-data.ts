import { type ModelInfo, type Provider, waitForUpdate } from '@pydantic/genai-prices'

/**
 * Newer price data as the library's maintainers publish it: the bundled data (as plain JSON)
 * with `added` models put first in their providers. The price updater refuses data that lacks a
 * provider or a model of the data in use, so a test's "newer data" starts from the whole of it.
 */
export async function newerPriceData(added: Record<string, ModelInfo[]>): Promise<Provider[]> {
  const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
  return bundled.map((p) => (added[p.id] ? { ...p, models: [...added[p.id]!, ...p.models] } : p))
}
