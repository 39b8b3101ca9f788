/**
 * Anthropic's published fast-mode prices (the request's `speed: "fast"`, the answer's
 * `usage.speed: "fast"`: `Usage.fast`), as a multiple of each token price of the model's standard
 * list, by the price data's model id. The price data (@pydantic/genai-prices) has standard prices
 * only, so such a call was priced at the standard list, one sixth of the bill for Claude Opus 4.6.
 *
 * Source: platform.claude.com/docs/build-with-claude/fast-mode, Claude Opus 4.6: $30 / $150 per
 * MTok input / output, 6x standard; while the standard list priced prompts over 200K tokens
 * apart (until March 13, 2026, as the price data dates it), $60 / $225 above 200K, that is 6x
 * that long-context list too; later versions of the page: "priced at a multiplier on standard
 * rates across the full context window". So 6x every token price of the list of the call's date,
 * tiers included. Fast-mode pricing "stacks with other pricing modifiers": the prompt-caching
 * multiples apply to the fast base, so 5-minute and 1-hour cache writes and cache reads are 6x
 * theirs too, and the data-residency 1.1x is applied on top (./price.ts).
 *
 * For the Claude API (`anthropic`) and Claude in Microsoft Foundry (`foundry`): Foundry bills
 * Claude in Claude Consumption Units, converted from "Anthropic's published per-model token rates
 * at Claude pricing" (learn.microsoft.com/azure/foundry/foundry-models/concepts/claude-models-billing;
 * Anthropic's page on Claude in Microsoft Foundry: "uses Anthropic's standard API pricing"), the
 * same per-model, per-feature rates its CCUs on other clouds are rated at, so fast mode's multiple
 * with them (a fast-mode deployment, `…-fast`: ../providers/foundry.ts). A contract's discount
 * lowers a bill below this, never raises it: a budget holds no less than is billed.
 *
 * Left out, priced at the standard rate with a line in the log (./price.ts): models whose fast
 * price Anthropic's pages give in versions this table could not confirm (Opus 4.8, Opus 5,
 * Opus 5.5 and later), and fast calls through Bedrock or Vertex AI, billed on their own price
 * lists. A `pricing.overrides` entry with `speed: fast` prices any of them, and wins over this
 * table.
 */
export const ANTHROPIC_FAST_MULTIPLES: Readonly<Record<string, number>> = {
  'claude-opus-4-6': 6,
}

/**
 * The providers whose calls are billed at these fast-mode prices: the Claude API
 * (../providers/anthropic.ts) and Claude in Microsoft Foundry (../providers/foundry.ts).
 */
export const ANTHROPIC_FAST_PROVIDERS: ReadonlySet<string> = new Set(['anthropic', 'foundry'])

/** The fast-mode multiple of the price data's model `tableId` for a call of `providerName`, or undefined. */
export function anthropicFastMultiple(providerName: string, tableId: string): number | undefined {
  if (!ANTHROPIC_FAST_PROVIDERS.has(providerName) || !Object.hasOwn(ANTHROPIC_FAST_MULTIPLES, tableId)) return undefined
  return ANTHROPIC_FAST_MULTIPLES[tableId]
}
