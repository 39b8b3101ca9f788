import { describe, expect, it } from 'vitest'
import { operationName, providerName, systemName } from './semconv'

describe('GenAI semantic conventions', () => {
  it("names Google's providers as the conventions do, and others as Burnrate does", () => {
    expect(providerName('gemini')).toBe('gcp.gemini')
    expect(providerName('vertex')).toBe('gcp.vertex_ai')
    expect(systemName('vertex')).toBe('gcp.vertex_ai')
    expect(providerName('bedrock')).toBe('aws.bedrock')
    expect(providerName('openrouter')).toBe('openrouter')
  })

  it("names Vertex AI's calls by what they are: Claude's as chat, Gemini's as content generation", () => {
    expect(operationName('messages')).toBe('chat')
    expect(operationName('streamGenerateContent')).toBe('generate_content')
    expect(operationName('count_tokens')).toBe('count_tokens')
  })
})
