import { describe, expect, it } from 'vitest'
import { countStored, importLogs } from '../../src/main/import/importer'
import { Pricer } from '../../src/main/pricing/price'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * A key's tenant is its newest call's, of those still requests. Two calls of the keyless key at
 * the same millisecond (two agents' answers, imported under different tenants), the later stored
 * one superseded by the proxy's record of its answer: the admin API's /api-keys gives the key the
 * other call's tenant at once, and a restart read the tenant of the superseded call (the seed took
 * the tenant of the latest stored call at the key's newest time, superseded or not).
 */

const rig = supersedeRig('burnrate-superseded-key-tenant')

const line = (at: number, id: string) => JSON.stringify({
  type: 'assistant', sessionId: id, uuid: `u-${id}`, cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: `req_${id}`,
  message: { ...BODY, id, usage: { ...BODY.usage, output_tokens: 1 } },
}) + '\n'

const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))
const view = (k: any) => (k ? { requests_month: k.requests_month, last_seen_at: k.last_seen_at, tenant: k.tenant } : null)

describe('a superseded call at the same time as its key\'s newest call left', () => {
  it('leaves the key the tenant of that call, live and after a restart', async () => {
    const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
    try {
      const at = Date.now() - 1000
      // Another answer at the same millisecond, imported first under tenant acme (`burnrate import --tenant acme`).
      const other = rig.home()
      rig.transcript(other, 'other', line(at, 'msg_other_answer'))
      const { db, ledger } = t.server
      const s = await importLogs(db, { agent: 'claude-code', pricer: new Pricer(), tenant: 'acme', home: other, env: {}, settleMs: 0, onCall: countStored(ledger, () => t.server.context.budgets) })
      expect(s.imported).toBe(1)
      // Then the answer the proxy records too, imported under no tenant: the later call stored.
      const home = rig.home()
      rig.transcript(home, 'sup', line(at, BODY.id))
      await rig.importLogs(t, home, 1)
      expect(view(await keyless(t.url))).toMatchObject({ requests_month: 2, last_seen_at: new Date(at).toISOString() })
      await rig.proxy(t, 'sk-ant-key-tenant-000001')
      await rig.untilSuperseded(t, BODY.id)

      const live = view(await keyless(t.url))
      expect(live).toEqual({ requests_month: 1, last_seen_at: new Date(at).toISOString(), tenant: 'acme' })
      const again = await t.restart()
      try {
        expect(view(await keyless(again.url))).toEqual(live)
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
