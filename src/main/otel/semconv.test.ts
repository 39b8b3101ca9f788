import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../ledger/record'
import { operationName, providerName, spanAttributes, systemName } from './semconv'

describe('GenAI semantic conventions', () => {
  it("names Google's providers as the conventions do, and others as Burnrate does", () => {
    expect(providerName('gemini')).toBe('gcp.gemini')
    expect(providerName('vertex')).toBe('gcp.vertex_ai')
    expect(systemName('vertex')).toBe('gcp.vertex_ai')
    expect(providerName('bedrock')).toBe('aws.bedrock')
    expect(providerName('openrouter')).toBe('openrouter')
  })

  it('names the providers behind a plan or a cloud by the well-known values, not by Burnrate\'s ids', () => {
    // Codex logged in with ChatGPT: OpenAI's models on OpenAI's backend.
    expect(providerName('chatgpt')).toBe('openai')
    expect(systemName('chatgpt')).toBe('openai')
    // Gemini Code Assist: a Google generative AI endpoint that is neither the Gemini API nor Vertex AI.
    expect(providerName('code-assist')).toBe('gcp.gen_ai')
    expect(systemName('code-assist')).toBe('gcp.gen_ai')
    // Claude on Microsoft Foundry: Azure AI Inference (Foundry's models), not Azure OpenAI.
    expect(providerName('foundry')).toBe('azure.ai.inference')
    expect(systemName('foundry')).toBe('az.ai.inference')
    // A span keeps Burnrate's own name beside the conventions' (a ChatGPT plan's call is not an API key's).
    const call = { provider: 'chatgpt', model: 'gpt-5-codex', endpoint: 'responses', status: 200, error: null, billing: 'subscription' } as unknown as CallRecord
    expect(spanAttributes(call)).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.system': 'openai', 'burnrate.provider': 'chatgpt', 'burnrate.billing': 'subscription' })
  })

  it("names Vertex AI's calls by what they are: Claude's as chat, Gemini's as content generation", () => {
    expect(operationName('messages')).toBe('chat')
    expect(operationName('streamGenerateContent')).toBe('generate_content')
    expect(operationName('count_tokens')).toBe('count_tokens')
  })
})
