import { describe, expect, it } from 'vitest'
import { opencodeCall } from '../../src/main/import/sources/opencode'

/**
 * opencode names some providers otherwise than Burnrate does: its calls are recorded (and matched
 * to their proxied twins, and priced) under Burnrate's names, as the proxy records them. Its
 * `google-vertex` calls through Burnrate's /vertex route were imported again as a provider of
 * their own (counted twice, checked with the real opencode).
 */
const message = (providerID: string) => ({
  id: `msg_${providerID}`, role: 'assistant', providerID, modelID: 'gemini-2.5-flash', sessionID: 'ses_1',
  time: { created: Date.UTC(2026, 10, 20) }, path: { cwd: '/home/dev/x' }, tokens: { input: 100, output: 10, reasoning: 0, cache: { read: 0, write: 0 } },
})

describe("opencode's provider ids", () => {
  it('are Burnrate providers, with their prices', () => {
    const seen = ['google', 'google-vertex', 'google-vertex-anthropic', 'amazon-bedrock', 'openai', 'anthropic', 'azure', 'openrouter', 'some-gateway'].map((id) => {
      const c = opencodeCall(message(id), new Set())!
      return [id, c.provider, c.pricingId]
    })
    expect(seen).toEqual([
      ['google', 'gemini', 'google'],
      ['google-vertex', 'vertex', 'google'],
      ['google-vertex-anthropic', 'vertex', 'google'],
      ['amazon-bedrock', 'bedrock', 'aws'],
      ['openai', 'openai', 'openai'],
      ['anthropic', 'anthropic', 'anthropic'],
      ['azure', 'azure', 'azure'],
      ['openrouter', 'openrouter', 'openrouter'],
      ['some-gateway', 'some-gateway', 'some-gateway'],
    ])
  })
})
