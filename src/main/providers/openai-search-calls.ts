import type { Usage } from '../metering/usage'
import { previewSearch, searchKind } from './openai-usage'

/** The server-side tool calls a stream's output item events may carry, billed per call (or an image, ./openai-image-tool.ts). */
export const TOOL_ITEM = /"(?:image_generation|web_search|file_search)_call"/

/**
 * The searches a Responses stream made before it ended without its usage (cut before
 * `response.completed`): each `web_search_call` or `file_search_call` its
 * `response.output_item.done` events (or a terminal Response without usage) completed, counted
 * once by id, as ./openai-usage.ts's `addToolCalls` counts a terminal Response's `output`. OpenAI
 * bills each as it runs, so an estimate of the cut stream is charged them
 * (`MeterResult.billedSoFar`). A stream that ends with its usage is counted from its terminal
 * Response instead, so these are then unused.
 */
export class SearchToolCalls {
  private readonly web = new Set<string>()
  private readonly file = new Set<string>()

  /** Notes an output item (at `index` of the output): counted when it is a billed search. */
  item(item: unknown, index: number): void {
    const kind = searchKind(item)
    if (kind === null) return
    const id = (item as Record<string, unknown>).id
    ;(kind === 'web' ? this.web : this.file).add(typeof id === 'string' && id ? id : `#${index}`)
  }

  /** Notes every billed search of a Response's `output`. */
  output(output: unknown): void {
    if (Array.isArray(output)) for (let i = 0; i < output.length; i++) this.item(output[i], i)
  }

  /** The counts as a usage bills them, and whether the web searches ran with `web_search_preview` (the Response's echoed `tools`). */
  usage(tools: unknown): Pick<Usage, 'web_searches' | 'storage_searches' | 'web_search_preview'> | null {
    if (this.web.size === 0 && this.file.size === 0) return null
    const out: Pick<Usage, 'web_searches' | 'storage_searches' | 'web_search_preview'> = { web_searches: this.web.size, storage_searches: this.file.size }
    if (this.web.size > 0 && previewSearch(tools)) out.web_search_preview = true
    return out
  }
}
