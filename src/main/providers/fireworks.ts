import { openaiCompatible } from './openai-compatible'

/** Fireworks AI: https://docs.fireworks.ai/tools-sdks/openai-compatibility (models are `accounts/fireworks/models/...`). */
export const fireworks = openaiCompatible({
  name: 'fireworks',
  pricingId: 'fireworks',
  baseUrl: 'https://api.fireworks.ai/inference/v1',
})
