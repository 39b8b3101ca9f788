import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

/**
 * An upstream that answers a model call with a redirect ran no model: the call is recorded with
 * its status and costs nothing. Before, every answer under 400 was metered, and a redirect (no
 * usage in it) was taken for a stream cut before its usage: its prompt was estimated and charged,
 * and counted against the budgets, twice when the client followed the redirect back through Burnrate.
 */

const s = serverOverMockUpstream()

describe('an upstream redirect to a model call', () => {
  for (const status of [301, 307, 308]) {
    it(`${status}: recorded with its status, no tokens, nothing billed`, async () => {
      s.upstream.setResponder(() => ({ status, headers: { location: 'https://api.openai.com/v1/chat/completions', 'content-type': 'text/html' }, body: '<html>Moved</html>' }))
      const before = ledgerRows(s.t.dbFile).length
      const res = await request(`${s.t.url}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-redirect-0001' },
        body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'x'.repeat(40_000) }] }),
      })
      expect(res.status).toBe(status)
      expect(res.headers.location).toBe('https://api.openai.com/v1/chat/completions')
      const row = await eventually(() => {
        const r = ledgerRows(s.t.dbFile)
        return r.length > before ? r[r.length - 1] : undefined
      })
      expect({ status: row.status, input: row.input_tokens, output: row.output_tokens, estimated: row.estimated, cost: row.cost_usd }).toEqual({
        status, input: 0, output: 0, estimated: 0, cost: 0,
      })
    })
  }
})
