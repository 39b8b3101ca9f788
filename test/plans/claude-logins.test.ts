import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PlanNoticeLog } from '../../src/main/desktop-logic/tray-plans'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// One Claude account, several login tokens: a token is refreshed every few hours, and a second
// machine logs in with its own. A token's first call may count tokens, which names no account
// (only Claude Code's Messages calls carry the account_uuid): its plan reading was filed under the
// token, and a window past 80% notified once for the token and again for the account (before a
// refresh, after it, and after a restart, when no token is known yet) in the same window period.

let utilization = 0.85
const RESET = String(Math.floor((Date.now() + 2 * 3600_000) / 1000))
let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': String(utilization),
      'anthropic-ratelimit-unified-5h-reset': RESET,
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
})
afterAll(async () => {
  await upstream.close()
})

const ACCOUNT = '0b6e3d3c-1111-4222-8333-944445555666'
const SESSION = '11111111-2222-4333-8444-555555555555'

/** A Claude Code call with login `token`: a Messages call naming `account`, or (null) a token count, which names none. */
function claude(t: TestServer, token: string, account: string | null, u: number) {
  utilization = u
  const counting = account === null
  return postJson(
    `${t.url}/v1/messages${counting ? '/count_tokens' : ''}`,
    { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], ...(counting ? {} : { metadata: { user_id: JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: account, session_id: SESSION }) } }) },
    { authorization: `Bearer ${token}`, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'oauth-2025-04-20', 'user-agent': 'claude-cli/2.1.332 (external, cli)' },
  )
}

/** The desktop app's plan notices for server `t`, remembered in `log` as across its restarts (desktop/alerts.ts). */
function notices(t: TestServer, log: PlanNoticeLog, shown: string[]): void {
  t.server.context.plans!.onAlert((a) => {
    if (log.claim(a)) shown.push(`${a.window} ${a.threshold}`)
  })
}

describe('one Claude account, several login tokens', () => {
  it('a plan window past 80% notifies once in its period: first seen under a token, after a refresh, and after a restart', async () => {
    let t = await startTestServer({}, upstream.url)
    let log = new PlanNoticeLog()
    const shown: string[] = []
    notices(t, log, shown)
    try {
      // A fresh login's first call counts tokens; its next names the account.
      expect((await claude(t, 'sk-ant-oat01-first-login-token-1111', null, 0.85)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-first-login-token-1111', ACCOUNT, 0.86)).status).toBe(200)
      // Refreshed: the new token's first call counts tokens too.
      expect((await claude(t, 'sk-ant-oat01-refreshed-token-2222', null, 0.87)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-refreshed-token-2222', ACCOUNT, 0.88)).status).toBe(200)
      expect(shown).toEqual(['5h 0.8'])

      // Restarted (the notice log kept): the token's first call counts tokens again.
      log = PlanNoticeLog.fromJSON(JSON.parse(JSON.stringify(log)))
      t = await t.restart()
      notices(t, log, shown)
      expect((await claude(t, 'sk-ant-oat01-refreshed-token-2222', null, 0.89)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-refreshed-token-2222', ACCOUNT, 0.9)).status).toBe(200)
      expect(shown).toEqual(['5h 0.8'])

      // 95% is news, once, whichever token reads it first.
      expect((await claude(t, 'sk-ant-oat01-second-machine-3333', null, 0.96)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-second-machine-3333', ACCOUNT, 0.96)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-refreshed-token-2222', ACCOUNT, 0.97)).status).toBe(200)
      expect(shown).toEqual(['5h 0.8', '5h 0.95'])

      // A token given alone (CLAUDE_CODE_OAUTH_TOKEN: its calls name the account '') is an account of its own, notified as one.
      expect((await claude(t, 'sk-ant-oat01-setup-token-alone-4444', null, 0.85)).status).toBe(200)
      expect((await claude(t, 'sk-ant-oat01-setup-token-alone-4444', '', 0.85)).status).toBe(200)
      expect(shown).toEqual(['5h 0.8', '5h 0.95', '5h 0.8'])
    } finally {
      await t.cleanup()
    }
  })
})
