import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'

/**
 * `model` with `change` applied to each of its price tables (the one table, or each of a
 * time-constrained list's), the same object where `change` returned every table unchanged, so a
 * caller can tell by identity whether anything was derived.
 */
export function mapModelPrices(model: ModelInfo, change: (p: ModelPrice) => ModelPrice): ModelInfo {
  const p = model.prices
  if (Array.isArray(p)) {
    let changed = false
    const prices = p.map((c) => {
      const next = change(c.prices)
      if (next === c.prices) return c
      changed = true
      return { ...c, prices: next }
    })
    return changed ? { ...model, prices } : model
  }
  const next = change(p)
  return next === p ? model : { ...model, prices: next }
}
