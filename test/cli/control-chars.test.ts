import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Names come from whoever calls the proxy: header values arrive as Latin-1 (a C1 control such as
 * 0x9B, CSI, which a terminal takes as ESC [), a JSON body carries ESC, BEL, CR... `burnrate
 * report` prints them in its tables: they must reach the terminal as visible text (`\x1B`), never
 * as controls that clear lines, move the cursor, recolour figures or write the clipboard (OSC 52).
 * The CLI's own bold stays; --json keeps the names as they are (escaped by JSON).
 */
let upstream: MockUpstream
let t: TestServer
const cli = (...args: string[]) => runCliCaptured(...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir)

// Header values: Latin-1 with C1 controls (CSI 0x9B, OSC 0x9D ... ST 0x9C).
const AGENT = 'bot\x9b2J\x9b1Ahidden'
const SESSION = 'run\x9d52;c;ZXZpbA==\x9c-1'
const PROJECT = '/work/proj\x9b31m'
// A body's model: ESC sequences, BEL, CR, backspace and an OSC 52 clipboard write.
// And a line break, that would draw a row of its own.
const MODEL = 'gpt\x1b[2K\x1b[1A\x1b[32m$0.00\r\x08\x07\x1b]52;c;ZXZpbA==\x07\n│ fake │ 1 │'
// A key whose last four characters (its hint, `sk-…\x9B2J1`) hold a C1 CSI.
const KEY = 'sk-test-control-\x9b2J1'
// What a terminal must never get from a name: C0 (bar the newline), DEL and C1 controls.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/
// The CLI's own styling (bold, and the colours of `status`), the only escapes it may print.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const OWN_STYLE = /\x1b\[(1|22|31|33|39)m/g

beforeAll(async () => {
  // The upstream answers with the model it was asked for, as a real one does.
  upstream = await startMockUpstream((req) => {
    const answer = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString())
    answer.model = JSON.parse(req.body.toString()).model
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }
  })
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }] } }, upstream.url)
  const r = await postJson(
    `${t.url}/v1/chat/completions`,
    { model: MODEL, messages: [{ role: 'user', content: 'hi' }] },
    // (Node's client sends a header's string as Latin-1, byte for byte.)
    { authorization: `Bearer ${KEY}`, 'x-burnrate-agent': AGENT, 'x-burnrate-session': SESSION, 'x-burnrate-project': PROJECT },
  )
  expect(r.status, r.text).toBe(200)
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const visible = (s: string) => s.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)

describe('names with control characters in CLI tables', () => {
  it('stored the names as sent (the report API has them whole)', async () => {
    const r = await cli('report', 'session', '--json')
    expect(r.code, r.out).toBe(0)
    const row = JSON.parse(r.out).rows[0]
    expect([row.key, row.agent, row.project]).toEqual([SESSION, AGENT, PROJECT])
    expect(JSON.parse((await cli('report', 'model', '--json')).out).rows[0].key).toBe(MODEL)
  })

  for (const [kind, name] of [['agent', AGENT], ['session', SESSION], ['project', PROJECT], ['model', MODEL]] as const) {
    it(`report ${kind} prints the name with its controls made visible, as a terminal and not`, async () => {
      for (const tty of [false, true]) {
        const was = { isTTY: process.stdout.isTTY, force: process.env.FORCE_COLOR }
        process.stdout.isTTY = tty
        if (tty) process.env.FORCE_COLOR = '1'
        let r: Awaited<ReturnType<typeof cli>>
        try {
          r = await cli('report', kind)
        } finally {
          process.stdout.isTTY = was.isTTY
          if (was.force === undefined) delete process.env.FORCE_COLOR
          else process.env.FORCE_COLOR = was.force
        }
        expect(r.code, r.out).toBe(0)
        // As a terminal, the CLI's own bold is there (and only that is taken out before looking).
        if (tty) expect(r.out).toContain('\x1b[1m')
        else expect(r.out).not.toContain('\x1b[1m')
        const rest = r.out.replace(OWN_STYLE, '')
        expect(JSON.stringify(rest.match(new RegExp(CONTROL, 'g')))).toBe('null')
        // Its start, made visible: a long name is cut to the table's width (narrower beside an unpriced mark).
        expect(rest).toContain(visible(name).slice(0, 8))
        // Every line of the table as wide as the others.
        const lines = rest.split('\n').filter((l) => /^[┌│└]/.test(l))
        expect(new Set(lines.map((l) => l.length)).size, rest).toBe(1)
        // Borders, the head, the one row and the total: a name makes no row of its own.
        expect(lines, rest).toHaveLength(5)
      }
    })
  }

  it('status prints a budget line\'s key hint with its controls made visible', async () => {
    const r = await cli('status')
    expect(r.code, r.out).toBe(0)
    expect(JSON.stringify(r.out.match(new RegExp(CONTROL, 'g')))).toBe('null')
    expect(r.out).toContain('  * (sk-…\\x9B2J1) daily: ')
  })
})
