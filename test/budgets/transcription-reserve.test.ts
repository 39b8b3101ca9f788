import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { multipartForm, postForm } from '../support/multipart'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * A whisper-1 transcription is billed by its audio's seconds ($0.006 a minute), with no output
 * tokens. `reserve: expected` learnt only from calls with output, and what it learns beyond tokens
 * named no seconds of audio: every transcription reserved $0, however long the audio its key's
 * calls had been seen to bill, and a block rule let any number through at once (32 transcriptions
 * of 10 minutes each, $0.06 apiece, took a $0.10 rule to $1.92). What such a call was charged for
 * its seconds (or an OCR call for its pages) is now learnt as its charge beyond its tokens.
 */
const N = 32
const COST = 0.06
const LIMIT = 0.1
let upstream: MockUpstream
let t: TestServer
let held: Promise<void> | null = null
const AUDIO = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(64 * 1024, 0x55)])

beforeAll(async () => {
  upstream = await startMockUpstream(async () => {
    if (held) await held
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Hello there.', usage: { type: 'duration', seconds: 600 } }) }
  })
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-proj-block-*', daily_limit_usd: LIMIT, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
const post = (key: string) => postForm(`${t.url}/openai/v1/audio/transcriptions`, multipartForm({ model: 'whisper-1' }, AUDIO), `Bearer ${key}`)

describe('reserve: expected, whisper-1 transcriptions (billed by the second)', () => {
  it(`${N} at once pass a $${LIMIT} block rule by less than one call once the model's calls have been seen`, async () => {
    const learner = 'sk-proj-learner-aaaaaaaa-0001'
    for (let i = 0; i < 6; i++) expect(await post(learner)).toBe(200)
    // Another key's transcriptions teach what the model's calls cost (no rule of theirs): 10 minutes each.
    for (const c of callsOf(t, learner)) expect(c.cost_usd).toBeCloseTo(COST, 12)
    const key = 'sk-proj-block-aaaaaaaa-0001'
    let release!: () => void
    held = new Promise<void>((r) => (release = r))
    const before = upstream.requests.length
    let answered = 0
    // Every admitted call waits at the provider until each of the N has been admitted or refused.
    const all = Promise.all(Array.from({ length: N }, () => post(key).then((r) => (answered++, r))))
    await eventually(() => upstream.requests.length - before + answered === N, 20_000)
    release()
    held = null
    const replies = await all
    await eventually(() => expect(callsOf(t, key)).toHaveLength(N), 20_000)
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(replies.filter((r) => r === 200).length).toBeGreaterThan(0)
    // Builds before this one: all 32 admitted, $1.92.
    expect(spent).toBeLessThan(LIMIT + COST)
  })
})
