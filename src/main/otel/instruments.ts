import type { Counter, Histogram, Meter } from '@opentelemetry/api'
import { BURNRATE, GEN_AI } from './semconv'

/** `burnrate.token.type` values, in the order of a tick's token sums. */
export const TOKEN_TYPES = ['input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const
/** The ledger's column of each of TOKEN_TYPES (a moved call's `tokens` are keyed by them). */
export const TOKEN_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const

/** Recommended boundaries of the GenAI conventions. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]

/** The metrics Burnrate exports over OTLP (README: OpenTelemetry export). */
export interface Instruments {
  tokens: Histogram
  duration: Histogram
  cost: Counter
  costReductions: Counter
  allTokens: Counter
  tokenReductions: Counter
}

export function createInstruments(meter: Meter): Instruments {
  return {
    tokens: meter.createHistogram(GEN_AI.tokenUsage, {
      description: 'Input and output tokens per call (gen_ai.token.type).',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    duration: meter.createHistogram(GEN_AI.duration, {
      description: "Whole call, from its arrival at Burnrate to the last byte sent to the client.",
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    cost: meter.createCounter(GEN_AI.cost, { description: 'Cost of the calls in US dollars, plus what they cost more when re-priced or settled later.', unit: 'USD' }),
    costReductions: meter.createCounter(BURNRATE.costReductions, {
      description: 'What recorded calls cost less after they were recorded (re-priced lower), in US dollars: spend is gen_ai.usage.cost minus this.',
      unit: 'USD',
    }),
    allTokens: meter.createCounter(BURNRATE.tokens, {
      description: 'Tokens by burnrate.token.type: input, output, cache_read, cache_write, reasoning (the last three are parts of the first two).',
      unit: '{token}',
    }),
    tokenReductions: meter.createCounter(BURNRATE.tokenReductions, {
      description: 'How many tokens recorded calls have fewer after they were recorded (an estimate replaced by the real usage): the tokens are burnrate.tokens minus this.',
      unit: '{token}',
    }),
  }
}
