import type { IncomingHttpHeaders } from 'node:http'
import { readAnthropicUnified } from './anthropic-unified'
import { readCodex } from './codex'
import { readKeyLimits } from './key-limits'
import type { MeterReading } from './types'

/** Whether a response's headers may hold a meter: a cheap scan of the names before any parsing. */
function mayHold(headers: IncomingHttpHeaders): boolean {
  for (const name in headers) {
    if (name.startsWith('anthropic-ratelimit-') || name.startsWith('x-ratelimit-') || name.startsWith('x-codex-')) return true
  }
  return false
}

/**
 * The vendor's own meter from one response's headers: a plan's windows first, else the key's
 * limits (`provider`, the proxy's provider name, tells how long those windows are where the headers do not).
 */
export function readMeter(headers: IncomingHttpHeaders, now = Date.now(), provider?: string): MeterReading | null {
  if (!mayHold(headers)) return null
  const plan = readAnthropicUnified(headers) ?? readCodex(headers, now)
  if (plan && plan.windows.length > 0) return plan
  return readKeyLimits(headers, now, provider) ?? plan
}
