import { count, isObject } from '../metering/usage'
import { annotated, inspectOcr, OcrMeter } from './mistral-ocr'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'

/**
 * Mistral La Plateforme: https://docs.mistral.ai/api (streams end with a usage chunk). Its usage
 * adds `prompt_audio_seconds`, the length of the audio in the prompt: what a transcription
 * (`/audio/transcriptions`, Voxtral Mini Transcribe) is billed by, per minute, whatever its
 * tokens. It is read as the audio length (`audio_seconds`), which the price data prices for a
 * model billed so and leaves out for one billed by tokens (Voxtral Small in a chat). Its OCR
 * (`/ocr`) is billed by the page (./mistral-ocr.ts).
 */
const compatible = openaiCompatible({
  name: 'mistral',
  pricingId: 'mistral',
  baseUrl: 'https://api.mistral.ai/v1',
  usage: (raw) => {
    const u = openaiUsage(raw)
    const seconds = u && isObject(raw) ? count(raw.prompt_audio_seconds) : 0
    if (u && seconds > 0) u.extra = { ...u.extra, audio_seconds: seconds }
    return u
  },
})

export const mistral: Provider = {
  ...compatible,
  inspect: (req) => inspectOcr(req) ?? compatible.inspect(req),
  meter: (shape, req) => (shape.endpoint === 'ocr' ? new OcrMeter(annotated(req.body)) : compatible.meter(shape, req)),
}
