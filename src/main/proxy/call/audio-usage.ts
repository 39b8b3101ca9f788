import type { IncomingHttpHeaders } from 'node:http'
import { audioSeconds } from '../../metering/audio-length'
import { emptyUsage, type Usage } from '../../metering/usage'
import type { Pricer } from '../../pricing/price'
import { formFile } from './form-file'
import type { CallState, Upload } from './state'

/** An audio call's body worth keeping to read its audio's length: a multipart form, not compressed (a copy would have to be decoded). */
export function audioUpload(body: Buffer, headers: IncomingHttpHeaders): Upload | undefined {
  const contentType = headers['content-type']
  if (!contentType || headers['content-encoding'] || !/^multipart\/form-data\b/i.test(contentType)) return undefined
  return { body, contentType }
}

/**
 * A transcription or translation whose answer gave no usage, billed by its audio's length: Groq's
 * whisper answered as `json` or `text`, any whisper as `text`, `srt` or `vtt` (plain text has no
 * room for a usage). The length is read from the uploaded file's headers (../../metering/audio-length.ts),
 * and only for a model the price data bills by the second of audio: a token-billed one
 * (gpt-4o-transcribe) is estimated as any call. Null when the file's length cannot be read (a
 * format not known, a header that does not say), so the call is estimated as before.
 */
export function uploadUsage(s: CallState, model: string, pricer: Pricer): Usage | null {
  const upload = s.upload
  s.upload = undefined
  if (!upload) return null
  const minute = emptyUsage()
  minute.extra = { audio_seconds: 60 }
  if (!(pricer.price(s.route.upstream.provider.pricingId, s.ctx.provider.name, model, minute, new Date(s.ctx.ts)).cost_usd > 0)) return null
  const file = formFile(upload.body, upload.contentType)
  const seconds = file ? audioSeconds(file) : null
  if (seconds === null) return null
  const usage = emptyUsage()
  usage.extra = { audio_seconds: Math.round(seconds * 1000) / 1000 }
  return usage
}
