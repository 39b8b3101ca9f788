import { describe, expect, it } from 'vitest'
import { isLongContextSonnet } from './claude-long-context'

describe('isLongContextSonnet', () => {
  it("names Sonnet 4's and Sonnet 4.5's tables on every platform, and no later Sonnet's", () => {
    for (const id of ['claude-sonnet-4-0', 'claude-sonnet-4-5', 'claude-4-sonnet', 'regional.anthropic.claude-sonnet-4-20250514-v1:0', 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4@20250514']) {
      expect(isLongContextSonnet(id), id).toBe(true)
    }
    for (const id of ['claude-sonnet-4-6', 'regional.anthropic.claude-sonnet-4-6-v1:0', 'claude-sonnet-5', 'claude-opus-4-0', 'claude-3-7-sonnet-latest', 'anthropic/claude-sonnet-4.5']) {
      expect(isLongContextSonnet(id), id).toBe(false)
    }
  })
})
