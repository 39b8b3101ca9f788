import { describe, expect, it } from 'vitest'
import { alertsOf, sendTestAlert } from '../../src/main/alerts'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { pgBudgetServer } from '../budgets/support'
import { receiver } from './support'

/**
 * On PostgreSQL a runaway agent's alert is the instance's own (its checks run where the call is):
 * no claim stands for it. One whose webhook retry was still waiting at shutdown (a deploy while the
 * webhook was down) was lost, where SQLite keeps it for the next start (./shutdown-retry.test.ts).
 * It is kept in the instance's own file too, and sent by its next start.
 */

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }),
})

const msg = (role: string, text: string) => ({ role, content: text })
function stuck(n: number): unknown[] {
  const messages = [msg('user', 'fix the parser')]
  for (let i = 0; i < n; i++) messages.push(msg('assistant', 'npm test'), msg('user', 'Error: Cannot find module src/parser.ts'))
  return messages
}

describe('a runaway alert whose retry waits at shutdown (PostgreSQL)', () => {
  it('is sent by the instance started again, once', async () => {
    const hook = await receiver(1)
    h.onTeardown(() => hook.close())
    const config = {
      runaway: { loop: { action: 'warn', repeats: 3 } },
      alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 },
    }
    const url = h.database()
    const a = await pgBudgetServer(h, url, config)
    const call = (n: number) =>
      postJson(`${a.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 64, messages: stuck(n) }, {
        'x-api-key': 'sk-ant-rwsd-aaaaaaaa-0001', 'anthropic-version': '2023-06-01', 'x-burnrate-session': 'pg-stuck',
      })
    for (const n of [1, 2, 3]) expect((await call(n)).status).toBe(200)
    const sender = alertsOf(a.server.context).webhooks
    await eventually(() => sender.deliveries().some((d) => d.type === 'runaway.loop' && d.last_status === 500), 20_000)
    await a.stop()
    expect(hook.got).toHaveLength(0)
    const b = await pgBudgetServer(h, url, config, a.dir)
    await eventually(() => hook.got.length === 1, 20_000)
    expect(hook.got[0].body).toMatchObject({ type: 'runaway.loop', session: 'pg-stuck' })
    await eventually(() => alertsOf(b.server.context).webhooks.deliveries()[0]?.status === 'delivered')
    await b.stop()
    // Started again, it does not send it a second time. What the file kept is sent as the server
    // starts, and a webhook's alerts go in turn: a test alert sent now reaches it after any such
    // one, and is the only alert made or received.
    const c = await pgBudgetServer(h, url, config, a.dir)
    const alerts = alertsOf(c.server.context)
    const [test] = await sendTestAlert(alerts)
    expect(test.status).toBe('delivered')
    expect(alerts.webhooks.deliveries().map((d) => d.type)).toEqual(['test'])
    expect(hook.got.map((g) => g.body.type)).toEqual(['runaway.loop', 'test'])
  }, 120_000)
})
