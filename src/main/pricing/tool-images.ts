import { emptyUsage, type Usage } from '../metering/usage'
import type { Priced } from './library-prices'

/**
 * The image model of the Responses API's image_generation tool when the tool names none (the API
 * reference's default for `tools[].model`), and the one whose price an image model without a
 * price of its own is charged: gpt-image-1's output image tokens ($40 per million) are the dearest
 * of the GPT Image models OpenAI gives token counts for (gpt-image-1.5 $32, gpt-image-1-mini $8).
 */
export const DEFAULT_IMAGE_MODEL = 'gpt-image-1'

/**
 * The images an image tool made (`Usage.tool_images`: output image tokens by image model), each
 * model's tokens priced as its own call would be (`price`: a runtime price or override for that
 * model, else the price data's output image rate), never with the mainline call's tier, batch
 * or residency marks: the image is the image model's. A model nothing prices is charged
 * DEFAULT_IMAGE_MODEL's price; if that has none either, the images are not priced (`priced: false`).
 */
export function priceToolImages(images: Record<string, number>, price: (model: string, u: Usage) => Priced): Priced {
  let cost = 0
  for (const model of Object.keys(images)) {
    const n = images[model]!
    if (!(n > 0)) continue
    const u: Usage = { ...emptyUsage(), output_tokens: n, extra: { output_image_tokens: n } }
    let p = price(model, u)
    if (!p.priced && model !== DEFAULT_IMAGE_MODEL) p = price(DEFAULT_IMAGE_MODEL, u)
    if (!p.priced) return { cost_usd: 0, priced: false }
    cost += p.cost_usd
  }
  return { cost_usd: cost, priced: true }
}
