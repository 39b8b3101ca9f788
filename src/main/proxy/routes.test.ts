import { describe, expect, it } from 'vitest'
import { PROVIDERS } from '../providers/registry'
import { Router, buildUpstreams, upstreamPath } from './routes'

const CLAUDE = '/vertex/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict'

describe('Router: Vertex AI upstreams by location', () => {
  it('with no base URL configured, each location has its own upstream, the same one for every call', () => {
    const router = new Router(buildUpstreams(PROVIDERS, {}))
    const a = router.match(CLAUDE, {})!
    expect(a.upstream).toMatchObject({ origin: 'https://us-east5-aiplatform.googleapis.com', host: 'us-east5-aiplatform.googleapis.com', port: 443, protocol: 'https:', regional: false })
    expect(a.upstream.provider.name).toBe('vertex')
    expect(upstreamPath(a)).toBe('/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict')
    expect(router.match(CLAUDE, {})!.upstream).toBe(a.upstream)
    expect(router.match(CLAUDE.replace('us-east5', 'global'), {})!.upstream.origin).toBe('https://aiplatform.googleapis.com')
  })

  it('a path that names no location Burnrate knows gets the provider with no upstream (the handler says what to set)', () => {
    const router = new Router(buildUpstreams(PROVIDERS, {}))
    expect(router.match(CLAUDE.replace('us-east5', 'evil.example'), {})!.upstream.baseUrl).toBeNull()
    expect(router.match('/vertex/v1/models', {})!.upstream.baseUrl).toBeNull()
  })

  it('keeps at most 64 locations; more get no upstream rather than a connection pool each', () => {
    const router = new Router(buildUpstreams(PROVIDERS, {}))
    const upstreams = new Set<unknown>()
    for (let i = 0; i < 70; i++) upstreams.add(router.match(CLAUDE.replace('us-east5', `us-east${i}`), {})!.upstream)
    expect([...upstreams].filter((u: any) => u.baseUrl !== null)).toHaveLength(64)
    expect(router.match(CLAUDE.replace('us-east5', 'us-east69'), {})!.upstream.baseUrl).toBeNull()
    // Those it keeps still answer.
    expect(router.match(CLAUDE.replace('us-east5', 'us-east3'), {})!.upstream.baseUrl).toBe('https://us-east3-aiplatform.googleapis.com')
  })

  it('a configured base URL serves every location', () => {
    const router = new Router(buildUpstreams(PROVIDERS, { vertex: { base_url: 'https://gateway.example/vertex' } }))
    const r = router.match(CLAUDE, {})!
    expect(r.upstream.origin).toBe('https://gateway.example')
    expect(upstreamPath(r)).toBe('/vertex/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict')
    expect(router.match(CLAUDE.replace('us-east5', 'evil.example'), {})!.upstream).toBe(r.upstream)
  })
})

describe('Router: Bedrock upstreams by region', () => {
  const INVOKE = '/bedrock/us-west-2/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream'

  it("with no base URL configured, the address's region picks the host and leaves the path", () => {
    const router = new Router(buildUpstreams(PROVIDERS, {}))
    const r = router.match(INVOKE, {})!
    expect(r.upstream.origin).toBe('https://bedrock-runtime.us-west-2.amazonaws.com')
    expect(upstreamPath(r)).toBe('/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream')
    const profiles = router.match('/bedrock/us-west-2/inference-profiles?type=SYSTEM_DEFINED', {})!
    expect(profiles.upstream.origin).toBe('https://bedrock.us-west-2.amazonaws.com')
    expect(upstreamPath(profiles)).toBe('/inference-profiles?type=SYSTEM_DEFINED')
    // Its OpenAI-compatible Chat Completions API (docs.aws.amazon.com/bedrock/latest/userguide/inference-chat-completions.html:
    // base URL https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1) is the runtime's, not the control plane's.
    const chat = router.match('/bedrock/us-west-2/openai/v1/chat/completions', {})!
    expect(chat.upstream.origin).toBe('https://bedrock-runtime.us-west-2.amazonaws.com')
    expect(upstreamPath(chat)).toBe('/openai/v1/chat/completions')
    // No region in the address: no upstream, and the handler says to put one there.
    const none = router.match('/bedrock/model/x/invoke', {})!
    expect(none.upstream.baseUrl).toBeNull()
    expect(none.upstream.provider.noUpstreamHint).toContain('/bedrock/us-east-1')
  })

  it('a configured base URL takes every region, the region left out of the path', () => {
    const router = new Router(buildUpstreams(PROVIDERS, { bedrock: { base_url: 'https://gateway.example/aws' } }))
    const r = router.match(INVOKE, {})!
    expect(r.upstream.origin).toBe('https://gateway.example')
    expect(upstreamPath(r)).toBe('/aws/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream')
    expect(upstreamPath(router.match('/bedrock/model/x/invoke', {})!)).toBe('/aws/model/x/invoke')
  })
})

describe('Router: the bare /v1 alias sends a call to the vendor whose key or path it is', () => {
  const router = new Router(buildUpstreams(PROVIDERS, {}))
  const to = (url: string, headers: Record<string, string> = {}) => router.match(url, headers)!.upstream.provider.name

  it("Gemini's v1 methods and tuned models, and any call with a Gemini key, go to Gemini with their path", () => {
    for (const m of ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents']) {
      expect(to(`/v1/models/gemini-2.5-flash:${m}`)).toBe('gemini')
    }
    expect(to('/v1/tunedModels/my-model:generateContent')).toBe('gemini')
    const r = router.match('/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse', {})!
    expect(upstreamPath(r)).toBe('/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
    expect(to('/v1/models', { 'x-goog-api-key': 'AIza-k' })).toBe('gemini')
    expect(to('/v1/models?pageSize=5&key=AIza-k')).toBe('gemini')
    // Even with an Anthropic header or path: the key is Gemini's.
    expect(to('/v1/messages', { 'x-goog-api-key': 'AIza-k', 'anthropic-version': '2023-06-01' })).toBe('gemini')
  })

  it("Gemini's Live API socket at the bare address (an SDK whose base URL is Burnrate's) goes to Gemini with its path and query", () => {
    const live = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent'
    const r = router.match(`${live}?key=AIza-k`, {})!
    expect(r.upstream.provider.name).toBe('gemini')
    expect(upstreamPath(r)).toBe(`${live}?key=AIza-k`)
    expect(to('/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained?access_token=t')).toBe('gemini')
    // Another /ws/ path is no provider's.
    expect(router.match('/ws/other', {})).toBeNull()
  })

  it("an Anthropic key sent as Anthropic's clients send it goes to Anthropic, even without anthropic-version", () => {
    expect(to('/v1/models', { 'x-api-key': 'sk-ant-api03-k' })).toBe('anthropic')
    expect(to('/v1/messages', { authorization: 'Bearer gateway-token' })).toBe('anthropic')
  })

  it("OpenAI keeps its own: the model list, a model's retrieve (fine-tuned ids have colons), other keys", () => {
    const key = { authorization: 'Bearer sk-proj-k' }
    expect(to('/v1/models', key)).toBe('openai')
    expect(to('/v1/models/gpt-4o', key)).toBe('openai')
    expect(to('/v1/models/ft:gpt-4o-mini:acme::abc123', key)).toBe('openai')
    expect(to('/v1/chat/completions', { ...key, 'x-api-key': 'some-other-key' })).toBe('openai')
    expect(to('/v1/responses?include=x', key)).toBe('openai')
  })
})

describe('the /v1 alias with a gateway as OpenAI’s base URL', () => {
  // README: providers.openai.base_url is how OpenAI-compatible gateways are used, and the OpenAI
  // SDK (a bearer token, whatever the key) reaches them on the bare /v1.
  it("an OpenAI-SDK call to Google's OpenAI-compatible endpoint (a Gemini key as bearer) goes to that base URL", () => {
    const router = new Router(buildUpstreams(PROVIDERS, { openai: { base_url: 'https://generativelanguage.googleapis.com/v1beta/openai' } }))
    const r = router.match('/v1/chat/completions', { authorization: 'Bearer AIzaSyExampleKey' })!
    expect(r.upstream.provider.name).toBe('openai')
    expect(r.upstream.origin + upstreamPath(r)).toBe('https://generativelanguage.googleapis.com/v1beta/openai/chat/completions')
  })

  it('a gateway call whose bearer is an Anthropic key goes to the gateway', () => {
    const router = new Router(buildUpstreams(PROVIDERS, { openai: { base_url: 'https://gateway.corp/openai/v1' } }))
    const r = router.match('/v1/chat/completions', { authorization: 'Bearer sk-ant-api03-k' })!
    expect(r.upstream.provider.name).toBe('openai')
    expect(r.upstream.origin + upstreamPath(r)).toBe('https://gateway.corp/openai/v1/chat/completions')
  })
})

describe('Router: Perplexity, whose Agent API is under /v1 and Sonar at the root', () => {
  it('…/perplexity/v1/responses (and /agent) go to /v1 on its host; Sonar chat completions to the root', () => {
    const router = new Router(buildUpstreams(PROVIDERS, {}))
    const agent = router.match('/perplexity/v1/responses', {})!
    expect(agent.upstream.origin).toBe('https://api.perplexity.ai')
    expect(upstreamPath(agent)).toBe('/v1/responses')
    expect(upstreamPath(router.match('/perplexity/v1/agent', {})!)).toBe('/v1/agent')
    const sonar = router.match('/perplexity/v1/chat/completions', {})!
    expect(sonar.upstream.origin).toBe('https://api.perplexity.ai')
    expect(upstreamPath(sonar)).toBe('/chat/completions')
    // Only those paths: one that merely begins with the same letters stays at the root.
    expect(upstreamPath(router.match('/perplexity/v1/responsesx', {})!)).toBe('/responsesx')
  })

  it('a configured base URL (a gateway) keeps the same layout below it', () => {
    const router = new Router(buildUpstreams(PROVIDERS, { perplexity: { base_url: 'https://gateway.example/pplx' } }))
    expect(upstreamPath(router.match('/perplexity/v1/responses', {})!)).toBe('/pplx/v1/responses')
    expect(upstreamPath(router.match('/perplexity/v1/chat/completions', {})!)).toBe('/pplx/chat/completions')
  })
})
