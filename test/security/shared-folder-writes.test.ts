import { chmodSync, chownSync, lchownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import { postJson } from '../support/http'
import { startTestServer } from '../support/server'
import { readSpill, rewriteSpill, writeSpill } from '../../src/main/reliability/spill'
import type { CallRecord } from '../../src/main/ledger/record'
import { waitForUpdate } from '@pydantic/genai-prices'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * In a data folder other users may write (README: Files), Burnrate's own writes there must never
 * follow a link another user planted under the name of a temporary file it is about to write: the
 * write would replace whatever file of the user's the link points to (a ~/.bashrc, an SSH key)
 * with Burnrate's JSON. Temporary names are predictable (the process id), so such a link can wait.
 */
const OTHER = 65534 // nobody
const asRoot = process.getuid?.() === 0
const TOKEN = 'admin-token-for-shared-folder-writes-01'
let dirs: string[] = []
let servers: BurnrateServer[] = []
afterEach(async () => {
  for (const s of servers) await s.close(1000).catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  servers = []
  dirs = []
})

function call(session: string): CallRecord {
  return {
    ts: 1_700_000_000_000, provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session, status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.001, priced: true, estimated: false, latency_ms: 12.5, error: null,
  }
}

function sharedFolderWithBait(name: string): { dataDir: string; victim: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'burnrate-shared-writes-'))
  dirs.push(root)
  const dataDir = join(root, 'data')
  mkdirSync(dataDir)
  chmodSync(dataDir, 0o777)
  chownSync(dataDir, OTHER, OTHER)
  // A file of the user's own, elsewhere.
  const victim = join(root, 'precious.txt')
  writeFileSync(victim, 'precious\n')
  const link = join(dataDir, name)
  symlinkSync(victim, link)
  lchownSync(link, OTHER, OTHER)
  return { dataDir, victim, root }
}

describe('a link planted in a shared data folder under the name of a temporary file', () => {
  it.runIf(asRoot)("connecting an agent does not write its records through it (agent-connections.json's temporary file)", async () => {
    const { dataDir, victim, root } = sharedFolderWithBait(`agent-connections.json.burnrate-${process.pid}.tmp`)
    const home = join(root, 'home')
    mkdirSync(join(home, '.claude'), { recursive: true })
    writeFileSync(join(home, '.claude', 'settings.json'), '{}\n')
    const config = loadConfig({ dataDir }, {})
    config.server.port = 0
    config.admin = { enabled: true, token: TOKEN }
    const server = createBurnrate(config, { log: silentLogger, agentHome: { home, env: { PATH: '' }, platform: 'linux' } })
    servers.push(server)
    const url = await server.listen()
    await postJson(`${url}/api/admin/agents/claude-code/connect`, {}, { authorization: `Bearer ${TOKEN}` })
    expect(readFileSync(victim, 'utf8').slice(0, 40)).toBe('precious\n')
    expect(lstatSync(victim).mode & 0o777).toBe(0o644)
  })

  it.runIf(asRoot)('a price update does not keep its data through it (prices.json\'s temporary file)', async () => {
    const { dataDir, victim } = sharedFolderWithBait('prices.json.tmp')
    const data = JSON.stringify(await waitForUpdate())
    const prices = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(data))
    await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
    try {
      const t = await startTestServer({ pricing: { update_url: `http://127.0.0.1:${(prices.address() as AddressInfo).port}/data.json` } }, undefined, dataDir)
      servers.push(t.server)
      expect(await t.server.context.prices!.updater.update()).toBe(true)
      expect(readFileSync(victim, 'utf8').slice(0, 40)).toBe('precious\n')
      expect(lstatSync(victim).mode & 0o777).toBe(0o644)
    } finally {
      prices.closeAllConnections()
      await new Promise((r) => prices.close(r))
    }
  })

  it.runIf(asRoot)("rewriting a spill file to what is still to be stored does not write through it (the spill file's temporary file)", () => {
    const root = mkdtempSync(join(tmpdir(), 'burnrate-shared-writes-'))
    dirs.push(root)
    const dataDir = join(root, 'data')
    mkdirSync(dataDir)
    chmodSync(dataDir, 0o777)
    chownSync(dataDir, OTHER, OTHER)
    const calls = [call('spill-a'), call('spill-b')]
    const file = writeSpill(dataDir, calls, 1_700_000_000_000)
    // The file's name is there for anyone to list; the link waits under its temporary name.
    const victim = join(root, 'precious.txt')
    writeFileSync(victim, 'precious\n')
    symlinkSync(victim, `${file}.tmp`)
    lchownSync(`${file}.tmp`, OTHER, OTHER)
    rewriteSpill(file, calls.slice(1))
    expect(readFileSync(victim, 'utf8').slice(0, 40)).toBe('precious\n')
    expect(readSpill(file).map((c) => c.session)).toEqual(['spill-b'])
    expect(lstatSync(file).isSymbolicLink()).toBe(false)
  })
})
