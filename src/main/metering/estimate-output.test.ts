import { describe, expect, it } from 'vitest'
import { estimateOutputTokens } from './estimate'

describe('estimateOutputTokens (the output of a stream cut after its prompt-side usage)', () => {
  it('counts the text as the estimates do, scaled up when only a share of the stream was kept', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20)
    const one = await estimateOutputTokens('gpt-4o', text)
    expect(one).toBeGreaterThan(150)
    expect(await estimateOutputTokens('gpt-4o', text, 3)).toBe(Math.ceil(one * 3))
    // Claude: cl100k x 1.2 (a model of no known family: cl100k x 1)
    const cl100k = await estimateOutputTokens('mistral-large-latest', text)
    expect(await estimateOutputTokens('claude-sonnet-4-5', text)).toBe(Math.ceil(cl100k * 1.2))
    expect(await estimateOutputTokens('gpt-4o', '')).toBe(0)
    expect(await estimateOutputTokens('gpt-4o', text, Number.NaN)).toBe(one)
  })
})
