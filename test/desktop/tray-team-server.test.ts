import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually, postJson, request } from '../support/http'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The desktop app as a team server (`team.members`): the tray's today is the spend its dashboard
 * shows as *Spend today* (README: Reporting to a team server, "the team server's dashboard then
 * counts every member's calls"), its members' calls included, not only the calls it proxied itself.
 */
const TOKEN = 'team-token-alice-tray-7f3c9a1e5b'
const fake = appEachTest('burnrate-tray-team-')

function ingested(id: number, cost: number) {
  return {
    id, t: new Date(Date.now() - 1_000).toISOString(), provider: 'foundry', model: 'claude-opus-4-6', api_key_hash: 'a'.repeat(64),
    key_hint: 'sk-…abcd', tenant: '', agent: 'claude-code', session: 's', status: 200, streamed: false, input_tokens: 11,
    output_tokens: 228, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true,
    estimated: false, latency_ms: 100,
  }
}

describe('the tray of a desktop team server', () => {
  it("counts its members' calls in today's spend, as its dashboard does", async () => {
    const team = { members: [{ name: 'alice', token: TOKEN }] }
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', team }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    d.server!.ledger.record(callRecord({ cost_usd: 1.25 }))
    const r = await postJson(`${d.url}/api/ingest`, { calls: [ingested(1, 2.5), ingested(2, 4)] }, { authorization: `Bearer ${TOKEN}` })
    expect(r.json()).toMatchObject({ accepted: 2 })
    const summary = (await request(`${d.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(7.75)
    const tray = state.trays[0]
    await eventually(() => tray.menu?.items[0].label === 'Today: $7.75', 10_000)
    expect(tray.tooltip).toContain('Burnrate: $7.75 today')
  }, 60_000)
})
