import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { storedAfter } from './batch-support'
import { rows } from './ledger'

// A Gemini batch's results file whose lines carry no `key` is keyed by each line's place. A client
// resuming a download (`Range: bytes=N-`, answered 206) sees the file from its middle: its first
// whole line is not the file's first, so its places are not the lines' own. Recorded by them, a
// later full read took the first lines for requests recorded already: they were never recorded.

const KEY = 'AIza-gemini-batch-range-aaaaaaaa'
const thoughts = fixtureJson('gemini/generate-content-thoughts.json')
const LINES = ['r1', 'r2', 'r3'].map((id) => JSON.stringify({ response: { ...thoughts, responseId: id } }) + '\n')
const FILE = Buffer.from(LINES.join(''))
/** Where the second line begins. */
const SECOND = Buffer.byteLength(LINES[0])

describe('Gemini batch results file read in a range, then whole', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream((req): Reply => {
      const m = /^bytes=(\d+)-$/.exec(String(req.headers.range ?? ''))
      if (!m) return { headers: { 'content-type': 'application/octet-stream' }, body: FILE }
      const from = Number(m[1])
      return {
        status: 206,
        headers: { 'content-type': 'application/octet-stream', 'content-range': `bytes ${from}-${FILE.length - 1}/${FILE.length}` },
        body: FILE.subarray(from),
      }
    })
    t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  it('records each request once: the ranged read records no line it cannot place, the full read records all', async () => {
    const read = (headers: Record<string, string> = {}) =>
      request(`${t.url}/download/v1beta/files/batch-out-r:download?alt=media`, { headers: { 'x-goog-api-key': KEY, ...headers } })
    const part = await read({ range: `bytes=${SECOND}-` })
    expect(part.status).toBe(206)
    expect(part.body.equals(FILE.subarray(SECOND))).toBe(true)
    await eventually(() => rows(t).filter((c) => c.endpoint === 'files.download').length === 1)
    expect((await read()).status).toBe(200)
    await eventually(() => rows(t).filter((c) => c.endpoint === 'files.download').length === 2)
    const batch = () => rows(t).filter((c) => c.endpoint === 'batch.generateContent')
    await eventually(() => batch().length >= 2)
    await storedAfter(t, upstream)
    expect(batch().map((c) => c.response_id).sort()).toEqual(['r1', 'r2', 'r3'])
  })
})
