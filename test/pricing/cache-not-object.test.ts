import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { PRICES_FILE } from '../../src/main/pricing/update'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer as answer } from './support'

/**
 * The data folder's prices.json is read at start-up, before the first call is priced. A file that
 * is JSON but no object (`null`, `7`: written by hand or by another tool) is not price data:
 * the bundled data prices. Builds before this one threw reading its fields, so the prices were
 * never ready and every call was refused with a 500, until the file was removed.
 */
describe('a prices.json in the data folder that is JSON but no object', () => {
  let upstream: MockUpstream | undefined
  let t: TestServer | undefined
  let dir = ''
  afterEach(async () => {
    await t?.cleanup()
    await upstream?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  // With entries it names as kept (`kept`), its providers were read before they were checked: the same 500 for every call.
  for (const text of ['null', '7', '"prices"', '{"providers": null}', '{"kept": ["openai gpt-4o"], "providers": null}', '{"kept": ["openai gpt-4o"], "providers": [null]}', '{"kept": ["openai gpt-4o"], "providers": [{"id": "openai"}]}']) {
    it(`(${text}) leaves the bundled data pricing calls`, async () => {
      dir = mkdtempSync(join(tmpdir(), 'burnrate-test-'))
      writeFileSync(join(dir, PRICES_FILE), text, { mode: 0o600 })
      upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer('gpt-4o-mini', 1_000_000, 0) }))
      t = await startTestServer({}, upstream.url, dir)
      const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-test-cache-0000000001' })
      expect(r.status).toBe(200)
      await t.server.ledger.flush()
      expect(t.server.db.prepare('SELECT cost_usd, priced FROM calls').all()).toEqual([{ cost_usd: 0.15, priced: 1 }])
    })
  }
})
