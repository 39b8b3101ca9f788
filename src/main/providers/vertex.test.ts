import { describe, expect, it } from 'vitest'
import { claudeVersion, inspectVertex, regionalPremium, vertex, vertexBaseUrlOf } from './vertex'
import type { RequestInfo } from './types'

const req = (path: string, body: unknown = {}, method = 'POST'): RequestInfo => ({ method, path, query: '', headers: {}, body })
const CLAUDE = '/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929'
const GEMINI = '/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-pro'

describe('Vertex AI requests', () => {
  it('Claude: rawPredict and streamRawPredict are Messages calls of the model in the path', () => {
    expect(inspectVertex(req(`${CLAUDE}:rawPredict`, { anthropic_version: 'vertex-2023-10-16', messages: [] }))).toEqual({
      endpoint: 'messages',
      model: 'claude-sonnet-4-5@20250929',
      stream: false,
      billable: true,
      // Claude Sonnet 4.5 through a region (us-east5): billed 10% above the global endpoint.
      dataResidency: true,
    })
    expect(inspectVertex(req(`${CLAUDE}:streamRawPredict`, { stream: true }))).toMatchObject({ endpoint: 'messages', stream: true, billable: true })
    // rawPredict with `stream: true` in the body streams too.
    expect(inspectVertex(req(`${CLAUDE}:rawPredict`, { stream: true })).stream).toBe(true)
    // A model id with an escaped `@`.
    expect(inspectVertex(req(CLAUDE.replace('@', '%40') + ':rawPredict')).model).toBe('claude-sonnet-4-5@20250929')
  })

  it('Claude: token counting costs nothing', () => {
    const s = inspectVertex(req('/v1/projects/p/locations/global/publishers/anthropic/models/count-tokens:rawPredict', { model: 'claude-sonnet-4-5@20250929' }))
    expect(s).toEqual({ endpoint: 'count_tokens', model: 'claude-sonnet-4-5@20250929', stream: false, billable: false })
  })

  it('Gemini: generateContent and streamGenerateContent as the Gemini API names them; countTokens costs nothing', () => {
    expect(inspectVertex(req(`${GEMINI}:generateContent`))).toMatchObject({ endpoint: 'generateContent', model: 'gemini-2.5-pro', stream: false, billable: true })
    expect(inspectVertex(req(`/v1beta1${GEMINI.slice(3)}:streamGenerateContent`))).toMatchObject({ endpoint: 'streamGenerateContent', model: 'gemini-2.5-pro', stream: true, billable: true })
    expect(inspectVertex(req(`${GEMINI}:countTokens`))).toMatchObject({ billable: false })
  })

  it('anything else passes, unbilled', () => {
    expect(inspectVertex(req('/v1/projects/p/locations/us-central1/endpoints', {}, 'GET'))).toEqual({ endpoint: 'other', model: '', stream: false, billable: false })
    expect(inspectVertex(req(`${CLAUDE}:rawPredict`, {}, 'GET')).billable).toBe(false)
  })

  it('meters Claude answers as Anthropic, Gemini answers as Gemini', () => {
    const claude = vertex.meter(inspectVertex(req(`${CLAUDE}:rawPredict`)), req(`${CLAUDE}:rawPredict`))
    claude.json({ type: 'message', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 7 } })
    expect(claude.result().usage).toMatchObject({ input_tokens: 15, cache_read_tokens: 5, output_tokens: 7 })
    const gemini = vertex.meter(inspectVertex(req(`${GEMINI}:generateContent`)), req(`${GEMINI}:generateContent`))
    gemini.json({ usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 3, thoughtsTokenCount: 4 }, modelVersion: 'gemini-2.5-pro' })
    expect(gemini.result().usage).toMatchObject({ input_tokens: 12, output_tokens: 7 })
  })
})

describe('Vertex AI regional endpoints: the premium for Claude Sonnet 4.5 and later', () => {
  it('reads Claude model versions in every spelling Vertex AI and Anthropic use', () => {
    expect(claudeVersion('claude-sonnet-4-5@20250929')).toEqual({ major: 4, minor: 5 })
    expect(claudeVersion('claude-opus-4-6')).toEqual({ major: 4, minor: 6 })
    expect(claudeVersion('claude-haiku-4-5@20251001')).toEqual({ major: 4, minor: 5 })
    expect(claudeVersion('claude-3-7-sonnet@20250219')).toEqual({ major: 3, minor: 7 })
    expect(claudeVersion('claude-3-5-sonnet-v2@20241022')).toEqual({ major: 3, minor: 5 })
    expect(claudeVersion('claude-sonnet-4@20250514')).toEqual({ major: 4, minor: 0 })
    expect(claudeVersion('claude-sonnet-4-20250514')).toEqual({ major: 4, minor: 0 })
    expect(claudeVersion('claude-opus-4-1@20250805')).toEqual({ major: 4, minor: 1 })
    expect(claudeVersion('claude-3-haiku@20240307')).toEqual({ major: 3, minor: 0 })
    expect(claudeVersion('claude-opus-5')).toEqual({ major: 5, minor: 0 })
    expect(claudeVersion('claude-fable-5-2')).toEqual({ major: 5, minor: 2 })
    expect(claudeVersion('gemini-2.5-pro')).toBeNull()
    expect(claudeVersion('claude-instant')).toBeNull()
  })

  it('a region or multi-region costs more from Sonnet 4.5 on; the global endpoint and earlier models never', () => {
    for (const m of ['claude-sonnet-4-5@20250929', 'claude-haiku-4-5@20251001', 'claude-opus-4-6', 'claude-opus-5-5', 'claude-fable-5-2']) {
      expect(regionalPremium('us-east5', m), m).toBe(true)
      expect(regionalPremium('europe-west1', m), m).toBe(true)
      expect(regionalPremium('us', m), m).toBe(true)
      expect(regionalPremium('global', m), m).toBe(false)
    }
    for (const m of ['claude-sonnet-4@20250514', 'claude-opus-4-1@20250805', 'claude-3-7-sonnet@20250219', 'claude-3-5-haiku@20241022', 'some-model']) {
      expect(regionalPremium('us-east5', m), m).toBe(false)
    }
    const path = (loc: string, model: string) => `/v1/projects/p/locations/${loc}/publishers/anthropic/models/${model}:streamRawPredict`
    expect(inspectVertex(req(path('global', 'claude-sonnet-4-5@20250929'))).dataResidency).toBeUndefined()
    expect(inspectVertex(req(path('us-east5', 'claude-sonnet-4@20250514'))).dataResidency).toBeUndefined()
    // Gemini costs the same everywhere.
    expect(inspectVertex(req('/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent')).dataResidency).toBeUndefined()
  })
})

describe('Vertex AI upstream by location', () => {
  it('global, the multi-regions and regions go to Google Cloud hosts; nothing else names a host', () => {
    expect(vertexBaseUrlOf(`${GEMINI}:generateContent`)).toBe('https://aiplatform.googleapis.com')
    expect(vertexBaseUrlOf('/v1/projects/p/locations/us/publishers/anthropic/models/m:rawPredict')).toBe('https://aiplatform.us.rep.googleapis.com')
    expect(vertexBaseUrlOf('/v1beta1/projects/p/locations/eu/interactions')).toBe('https://aiplatform.eu.rep.googleapis.com')
    expect(vertexBaseUrlOf(`${CLAUDE}:rawPredict`)).toBe('https://us-east5-aiplatform.googleapis.com')
    expect(vertexBaseUrlOf('/v1beta1/projects/p/locations/northamerica-northeast1')).toBe('https://northamerica-northeast1-aiplatform.googleapis.com')
    for (const loc of ['evil.example', 'us-east5.evil.example', 'x@y', '..', 'usa', 'US', 'eu.evil.example', 'US-EAST5', '127.0.0.1', 'a-b']) {
      expect(vertexBaseUrlOf(`/v1/projects/p/locations/${loc}/publishers/anthropic/models/m:rawPredict`), loc).toBeNull()
    }
    expect(vertexBaseUrlOf('/v1/publishers/google/models/gemini-2.5-pro:generateContent')).toBeNull()
  })
})
