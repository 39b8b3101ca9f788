import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { health } from '../../src/main/health'
import { createLogger } from '../../src/main/log'
import type { CallGate } from '../../src/main/proxy/gate'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'

/** A bug in a part of the hot path (here: a budget gate) costs at most that call, never the process. */

let upstream: MockUpstream
let server: BurnrateServer
let url: string
let dir: string
let mode: 'settle-throws' | 'refusal-unserialisable' | 'fine' = 'fine'
const lines: string[] = []

const gate: CallGate = {
  admit() {
    if (mode === 'settle-throws') return { settle: () => { throw new Error('settle bug') } }
    if (mode === 'refusal-unserialisable') return { refuse: { status: 429, headers: {}, body: { n: BigInt(1) }, reason: 'x' } }
    return {}
  },
}

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  dir = mkdtempSync(join(tmpdir(), 'burnrate-internal-'))
  const file = join(dir, 'config.yaml')
  writeFileSync(file, stringify({ server: { host: '127.0.0.1', port: 0 }, providers: { openai: { base_url: baseUrlFor('openai', upstream.url) } } }))
  server = createBurnrate(loadConfig({ config: file, dataDir: dir }, {}), {
    log: createLogger('info', (l) => lines.push(l)),
    features: [health, (ctx) => ctx.setGate(gate)],
  })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(500)
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

function count(): number {
  const db = new Database(join(dir, 'burnrate.db'), { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('internal failures on the hot path', () => {
  it('a settle() that throws: the call is still answered and recorded', async () => {
    mode = 'settle-throws'
    const res = await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
    expect(res.status).toBe(200)
    await eventually(() => count() === 1)
  })

  it('a refusal that cannot be sent: a 500 in the contract shape, logged, and the server goes on', async () => {
    mode = 'refusal-unserialisable'
    const res = await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
    expect(res.status).toBe(500)
    expect(res.json().error.type).toBe('internal')
    expect(lines.join('')).toMatch(/error proxy: .*BigInt/i)
    mode = 'fine'
    expect((await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })).status).toBe(200)
    expect((await request(`${url}/api/health`)).status).toBe(200)
  })
})
