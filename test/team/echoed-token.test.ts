import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { createLogger } from '../../src/main/log'
import { TeamSender } from '../../src/main/team/sender'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'

const TOKEN = 'team-token-echoed-back-0123456789abcdef'

/**
 * team.url pointing at a server (or a proxy in front of it) that echoes the request's
 * Authorization header in its error text: what the sender logs and reports must not carry the
 * team token, however the answer puts it (refusal, 5xx with the token across the 300-character cut,
 * a per-call rejection).
 */
describe('a team server that echoes the Authorization header in its errors', () => {
  const cleanups: (() => unknown)[] = []
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c()
    cleanups.length = 0
  })

  async function run(answer: (auth: string) => { status: number; body: unknown }, token = TOKEN): Promise<{ lines: string[]; lastError: string }> {
    const server = http.createServer(async (req, res) => {
      for await (const _ of req) void _
      const a = answer(req.headers.authorization ?? '')
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => server.close(r)))
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-echoed-token-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    db.prepare(INSERT_CALL_SQL).run(callValues(makeCall({ cost_usd: 0.01 }), []))
    const lines: string[] = []
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const sender = new TeamSender({ db, url, token, batchSize: 10, maxBackoffMs: 60_000, log: createLogger('debug', (l) => void lines.push(l)) }).start()
    cleanups.push(() => sender.stop())
    await eventually(() => lines.some((l) => l.includes('team:')))
    return { lines, lastError: sender.status().last_error ?? '' }
  }

  function expectNoToken(out: { lines: string[]; lastError: string }): void {
    const text = out.lines.join('') + out.lastError
    expect(text).not.toContain(TOKEN)
    // Not even the part of it a 300-character cut leaves.
    expect(text).not.toContain(TOKEN.slice(0, 12))
  }

  it('a refusal (401) quoting the header', async () => {
    const out = await run((auth) => ({ status: 401, body: { error: { type: 'unauthorized', message: `unknown token ${auth.slice("Bearer ".length)} (from "authorization: ${auth}")` } } }))
    expect(out.lines.join('')).toContain('refused the calls with 401')
    expectNoToken(out)
  })

  it('a 503 whose text cuts through the token at 300 characters', async () => {
    const out = await run((auth) => ({ status: 503, body: { error: { type: 'unavailable', message: `${'x'.repeat(275)} ${auth}` } } }))
    expect(out.lines.join('')).toContain('answered 503')
    expectNoToken(out)
  })

  it('a per-call rejection quoting the header', async () => {
    const out = await run((auth) => ({
      status: 200,
      body: { accepted: 0, duplicates: 0, revised: 0, rejected: [{ id: 1, error: { type: 'invalid', message: `bad call from ${auth}` } }] },
    }))
    expect(out.lines.join('')).toContain('refused 1 of 1 calls')
    expectNoToken(out)
  })

  it('a token with a comma or semicolon in it, quoted after Bearer', async () => {
    // team.token is any string: the Bearer pattern stops at ";", so the whole token goes first.
    const token = 'team;token,echoed-0123456789abcdef'
    const out = await run((auth) => ({ status: 401, body: { error: { type: 'unauthorized', message: `unknown ${auth}` } } }), token)
    expect(out.lines.join('')).toContain('refused the calls with 401')
    expect(out.lines.join('') + out.lastError).not.toContain('echoed-0123456789abcdef')
  })
})
