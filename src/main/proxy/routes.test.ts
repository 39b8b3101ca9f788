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
