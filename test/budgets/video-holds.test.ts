import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from '../providers/ledger'
import { PER_SECOND, type Videos, chargeOf, createVideo, pollVideo, videoResponder } from '../providers/xai-video-support'
import { spentToday } from './support'

// xAI's videos under a `block` rule: the POST that makes a video is answered with its id only,
// and what it cost comes with its finished poll, minutes later. Meanwhile the rule holds what the
// request says it will cost (its seconds at the model's per-second price), so an agent starting
// many videos at once cannot pass the limit before any of them is priced (README: xAI's video
// generation; Budgets → overshoot).

const videos: Videos = { made: new Map() }
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(videoResponder(videos))
  t = await startTestServer(
    {
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: 'xai-vidmax-*', daily_limit_usd: 1, action: 'block', reserve: 'max_tokens' },
          { api_key_pattern: 'xai-videxp-*', daily_limit_usd: 1, action: 'block' },
          { api_key_pattern: 'xai-vidcut-*', daily_limit_usd: 1, action: 'block', reserve: 'max_tokens' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const callsOf = (key: string) => rows(t).filter((r) => r.api_key_hash === hashKey(key) && r.endpoint === 'videos')

describe('xAI videos hold their expected cost under a block rule until their finished poll', () => {
  it('videos started together stop at the limit; each finished poll replaces its hold with its charge, once', async () => {
    const key = 'xai-vidmax-aaaaaaaaaaaa-0001'
    // 6 seconds at 480p: $0.30 each. Three fit in $1, a fourth would pass it.
    const replies = await Promise.all(Array.from({ length: 6 }, () => createVideo(t.url, key, { duration: 6, resolution: '480p' })))
    const ok = replies.filter((r) => r.status === 200)
    const refused = replies.filter((r) => r.status === 429)
    expect(ok).toHaveLength(3)
    expect(refused).toHaveLength(3)
    for (const r of refused) {
      expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: 1 })
      expect(r.json().error.message).toMatch(/could cost up to \$0\.300000 \(what it asks for at the published price\)/)
    }
    // Made, not yet priced: recorded at $0, estimated and unpriced, while the rule holds their cost.
    const ids = ok.map((r) => r.json().request_id as string)
    const made = await eventually(() => (callsOf(key).filter((c) => c.status === 200).length === 3 ? callsOf(key) : undefined))
    for (const c of made!.filter((c) => c.status === 200)) expect(c).toMatchObject({ cost_usd: 0, estimated: 1, priced: 0 })
    expect(spentToday(t, key)).toBe(0)
    // Their POSTs are over, their holds are not: one more is refused until the videos are done.
    expect((await createVideo(t.url, key, { duration: 6, resolution: '480p' })).status).toBe(429)

    for (const id of ids) {
      expect((await pollVideo(t.url, key, id)).status).toBe(200) // pending: nothing changes
      videos.made.get(id)!.done = true
      expect((await pollVideo(t.url, key, id)).status).toBe(200)
      expect((await pollVideo(t.url, key, id)).status).toBe(200) // read again: charged once
    }
    const charge = chargeOf(6, '480p')
    await eventually(() => callsOf(key).filter((c) => c.status === 200 && c.estimated === 0).length === 3)
    for (const c of callsOf(key).filter((c) => c.status === 200)) expect(c).toMatchObject({ cost_usd: charge, estimated: 0, priced: 1 })
    await eventually(() => Math.abs(spentToday(t, key) - 3 * charge) < 1e-9)

    // The holds are gone and the charges in: $0.10 left, so another 6-second video is refused, a 1-second one is not.
    expect((await createVideo(t.url, key, { duration: 6, resolution: '480p' })).status).toBe(429)
    expect((await createVideo(t.url, key, { duration: 1, resolution: '480p' })).status).toBe(200)
    expect(Math.abs(spentToday(t, key) - 3 * charge) < 1e-9).toBe(true)
  })

  it('a video that names no duration holds xAI default 8 seconds, at its resolution\'s price', async () => {
    const key = 'xai-videxp-aaaaaaaaaaaa-0002'
    // reserve: expected lets a video through while spend and holds are under $1: two 8-second 720p videos hold $1.12.
    expect((await createVideo(t.url, key, { resolution: '720p' })).status).toBe(200)
    expect((await createVideo(t.url, key, { resolution: '720p' })).status).toBe(200)
    const refused = await createVideo(t.url, key, { resolution: '720p' })
    expect(refused.status).toBe(429)
    expect(refused.json().error.message).toContain(`expected to cost $${(2 * 8 * PER_SECOND['720p']).toFixed(6)}`)
  })
})

describe('an xAI video whose creation answer is cut before its request_id', () => {
  it('is recorded at what it asked for (its seconds at the per-second price), estimated: no later answer can price it', async () => {
    const key = 'xai-vidcut-aaaaaaaaaaaa-0003'
    await createVideo(t.url, key, { duration: 5, resolution: '720p', prompt: 'cut' }).catch(() => undefined)
    const expected = 5 * PER_SECOND['720p']
    const call = await eventually(() => callsOf(key)[0])
    expect(call).toMatchObject({ provider: 'xai', model: 'grok-imagine-video', cost_usd: expected, estimated: 1, priced: 1, response_id: '' })
    await eventually(() => Math.abs(spentToday(t, key) - expected) < 1e-9)
    // Its reservation settled at that cost, nothing left held: $0.65 left fits an 8-second 720p video ($0.56), not two.
    expect((await createVideo(t.url, key, { duration: 8, resolution: '720p' })).status).toBe(200)
    expect((await createVideo(t.url, key, { duration: 8, resolution: '720p' })).status).toBe(429)
  })
})
