import { isObject, type Usage } from '../metering/usage'
import { DEFAULT_IMAGE_MODEL } from '../pricing/tool-images'

/**
 * The images the Responses API's built-in image_generation tool made, which the response's
 * `usage` does not count (it is the mainline model's only): each is billed as output image tokens
 * of the tool's GPT Image model, on top of the mainline model's tokens (community.openai.com
 * t/1277438, t/1358188: "the image tokens of the gpt-image-1 model are not what you are seeing in
 * the usage").
 *
 * How many tokens an image is, by its quality and size, is OpenAI's table in its image generation
 * guide (developers.openai.com/api/docs/guides/image-generation, "Cost and latency", "Models prior
 * to gpt-image-2"), the same for gpt-image-1, gpt-image-1-mini and gpt-image-1.5; its per-image
 * prices are these counts at each model's output image rate (gpt-image-1 at $40 per million:
 * $0.011, $0.042, $0.167 a square image). The rate is the price data's, not this file's
 * (pricing/tool-images.ts). The same guide ("Partial images cost") bills each partial image a
 * stream sent (`partial_images`) 100 more output image tokens.
 */
export const IMAGE_TOKENS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
}
/** What OpenAI bills a streamed partial image ("Partial images cost"). */
export const PARTIAL_IMAGE_TOKENS = 100
/** The models the table is OpenAI's for (a dated snapshot of one too). */
const TABLE_MODEL = /^gpt-image-1(?:-mini|\.5)?(?:-\d{4}-\d{2}-\d{2})?$/
/** A model name as kept (a key of `Usage.tool_images`); anything else is kept as the default model's. */
const MODEL_NAME = /^[\w.:-]{1,100}$/

/** The stream events that carry the tool's images. */
export const IMAGE_ITEM_DONE = 'response.output_item.done'
export const PARTIAL_IMAGE = 'response.image_generation_call.partial_image'

/**
 * A count this file cannot read from the answer is the most the table allows: a quality or size
 * left at `auto` (the tool's default; the answer's item normally names what was made) or not in
 * the table is the largest count of what is known (no quality: `high`; no size: the dearest size
 * of the quality, so high and neither known is 6,240, a high portrait image), and an image model
 * the table is not OpenAI's for (gpt-image-2, whose counts OpenAI gives only through a calculator,
 * or a model newer than this file) 6,240 too. Such a call is recorded estimated: over rather than
 * under what was billed, as a budget needs.
 */
function imageTokens(model: string, quality: string | undefined, size: string | undefined): { tokens: number; guessed: boolean } {
  const known = TABLE_MODEL.test(model)
  const row = known ? own(IMAGE_TOKENS, quality) : undefined
  const exact = own(row, size)
  if (exact !== undefined) return { tokens: exact, guessed: false }
  // The size known, the quality not: the dearest quality at that size.
  const high = IMAGE_TOKENS.high!
  const at = known && !row ? own(high, size) : undefined
  if (at !== undefined) return { tokens: at, guessed: true }
  return { tokens: Math.max(...Object.values(row ?? high)), guessed: true }
}

/** The table's own entry for `key` (never one of Object's: the key comes from the answer). */
function own<T>(table: Readonly<Record<string, T>> | undefined, key: string | undefined): T | undefined {
  return table && key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined
}

/**
 * What one response's image_generation tool made, as its answer tells it: the completed
 * `image_generation_call` items (a JSON answer's `output`; a stream's `response.output_item.done`
 * events and its terminal Response's `output`, each item counted once by its id), the partial
 * images streamed, and the tool's settings as the Response echoes them (`tools`).
 */
export class ImageToolCalls {
  /** The completed items' quality and size, by item id. */
  private readonly made = new Map<string, { quality: unknown; size: unknown }>()
  private partials = 0

  /** Notes an output item: counted when it is a completed image_generation_call. */
  item(item: unknown, index: number): void {
    if (!isObject(item) || item.type !== 'image_generation_call' || item.status !== 'completed') return
    const id = typeof item.id === 'string' && item.id ? item.id : `#${index}`
    this.made.set(id, { quality: item.quality, size: item.size })
  }

  /** Notes every completed image_generation_call of a Response's `output`. */
  output(output: unknown): void {
    if (!Array.isArray(output)) return
    for (let i = 0; i < output.length; i++) {
      const it = output[i]
      if (isObject(it) && it.type === 'image_generation_call') this.item(it, i)
    }
  }

  /** A partial image streamed (`response.image_generation_call.partial_image`). */
  partial(): void {
    this.partials++
  }

  /**
   * The images' output image tokens, under the image model of the Response's image_generation tool
   * (`tools`, as echoed), with whether a count is a guess; null when the tool made nothing.
   * An item's own quality and size (what was made) win over the tool's (what was asked, often `auto`).
   */
  usage(tools: unknown): Pick<Usage, 'tool_images' | 'guessed'> | null {
    if (this.made.size === 0 && this.partials === 0) return null
    const tool = Array.isArray(tools) ? tools.find((t) => isObject(t) && t.type === 'image_generation') : undefined
    const named = isObject(tool) ? tool.model : undefined
    const model = typeof named === 'string' && MODEL_NAME.test(named) ? named : DEFAULT_IMAGE_MODEL
    let tokens = this.partials * PARTIAL_IMAGE_TOKENS
    let guessed = typeof named === 'string' && model !== named
    for (const m of this.made.values()) {
      const one = imageTokens(model, known(m.quality) ?? known(tool?.quality), known(m.size) ?? known(tool?.size))
      tokens += one.tokens
      if (one.guessed) guessed = true
    }
    const out: Pick<Usage, 'tool_images' | 'guessed'> = { tool_images: { [model]: tokens } }
    if (guessed) out.guessed = true
    return out
  }
}

/**
 * What a Responses request's image_generation tool (`tools`) may be billed, for a budget's
 * reservation (`Usage.tool_images`): one image at the tool's model, quality and size (the most the
 * table allows for what it leaves to `auto`, as an answer naming neither is recorded), and the
 * partial images it asks a stream for; null without the tool. More images in one response are not
 * reserved: how many the model makes is known only from its answer.
 */
export function askedImages(tools: unknown): Record<string, number> | null {
  if (!Array.isArray(tools)) return null
  const tool = tools.find((t) => isObject(t) && t.type === 'image_generation')
  if (!isObject(tool)) return null
  const named = tool.model
  const model = typeof named === 'string' && MODEL_NAME.test(named) ? named : DEFAULT_IMAGE_MODEL
  const partials = typeof tool.partial_images === 'number' && tool.partial_images > 0 ? Math.min(3, Math.ceil(tool.partial_images)) : 0
  return { [model]: imageTokens(model, known(tool.quality), known(tool.size)).tokens + partials * PARTIAL_IMAGE_TOKENS }
}

/** A setting that names a value, not `auto` (nor nothing). */
function known(v: unknown): string | undefined {
  return typeof v === 'string' && v !== 'auto' ? v : undefined
}
