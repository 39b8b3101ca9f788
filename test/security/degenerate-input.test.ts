import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A call's own work on the event loop stays linear in what it sends, however degenerate: every
 * other call waits while it runs. Regular expressions are the trap here: one that can begin at
 * any position and must reach the end (`/\/+$/`), or a lazy one that must (`(.+?)\s*$`), runs
 * from each position to the end, n² steps over n characters (a 12,000-character path or header,
 * which fits in a request line, cost ~50-100 ms a call). The regular expressions a call runs
 * over such a text are recorded, and none may be of either shape.
 */

const ADMIN_TOKEN = 'admin-token-degenerate-0123456789'
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  t = await startTestServer({ admin: { enabled: true, token: ADMIN_TOKEN } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** The regular expressions run, during `fn`, over a text holding `run`. */
async function regexesOver(run: string, fn: () => Promise<unknown>): Promise<string[]> {
  const exec = RegExp.prototype.exec
  const seen = new Set<string>()
  RegExp.prototype.exec = function (this: RegExp, s: string) {
    if (typeof s === 'string' && s.includes(run)) seen.add(`/${this.source}/${this.flags}`)
    return exec.call(this, s)
  }
  try {
    await fn()
  } finally {
    RegExp.prototype.exec = exec
  }
  return [...seen]
}

/** A lazy quantifier whose every step retries what follows it to the end of the text. */
const lazyToEnd = (re: string): boolean => /\.[+*]\?/.test(re) && /\$\/\w*$/.test(re)
/** Tried from every position, each try running to the end of the text. */
const fromEachPositionToEnd = (re: string): boolean => !re.startsWith('/^') && /\$\/\w*$/.test(re)

const BODY = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
const SLASHES = '/'.repeat(12_000)

describe('a path of thousands of slashes', () => {
  const paths = [
    `/anthropic/v1/messages${SLASHES}x`,
    `/anthropic/v1/messages/batches/b${SLASHES}x/results`,
    `/azure/openai/deployments/d${SLASHES}x/chat/completions`,
    `/openai/v1/chat${SLASHES}x/`,
    `/openrouter/v1/messages${SLASHES}x`,
    `/bedrock/us-east-1/model/m${SLASHES}x/invoke`,
    `/vertex/v1/projects/p/locations/us-east5/publishers/anthropic/models/m${SLASHES}x:rawPredict`,
  ]
  for (const path of paths) {
    it(`${path.slice(0, path.indexOf(SLASHES))}…: no regular expression tries each of its positions`, async () => {
      const ran = await regexesOver(SLASHES, async () => {
        const res = await request(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-slashes-01' }, body: BODY })
        expect(res.status).toBeLessThan(500)
      })
      expect(ran.filter(fromEachPositionToEnd)).toEqual([])
    })
  }
})

describe('an Authorization header padded with thousands of spaces', () => {
  const SPACES = ' '.repeat(12_000)
  const padded = `Bearer sk-padded${SPACES}x`

  it('a proxied call reads its key without a lazy regular expression over it', async () => {
    const ran = await regexesOver(SPACES, async () => {
      const res = await request(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: padded }, body: BODY })
      expect(res.status).toBe(200)
    })
    expect(ran.filter(lazyToEnd)).toEqual([])
  })

  it('the admin API reads the token presented without one either (and refuses it)', async () => {
    const ran = await regexesOver(SPACES, async () => {
      const res = await request(`${t.url}/api/admin/providers`, { headers: { authorization: padded } })
      expect(res.status).toBe(401)
    })
    expect(ran.filter(lazyToEnd)).toEqual([])
    const ok = await request(`${t.url}/api/admin/providers`, { headers: { authorization: `  bearer \t${ADMIN_TOKEN}  ` } })
    expect(ok.status).toBe(200)
  })
})
