import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { makeCall } from '../dashboard/seed'
import { runCliCaptured, startLedger } from '../support/cli'
import { AgentConnections } from '../../src/main/connect/connections'
import { waitForUpdate } from '@pydantic/genai-prices'
import { postJson } from '../support/http'
import { startMockUpstream } from '../support/mock-upstream'
import { recorded } from '../providers/ledger'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A data folder shared with other users (one the user does not own, or a world-writable one):
 * Burnrate reads from it only files that are the user's own. Another user's `config.yaml` could
 * point a provider at their listener (every API key would go there); their spill file would put
 * forged calls in the ledger (and its removal, refused, stopped every start).
 */
const OTHER = 65534 // nobody
const asRoot = process.getuid?.() === 0
let dirs: string[] = []
let servers: TestServer[] = []
afterEach(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  servers = []
  dirs = []
})
const folder = () => {
  const d = mkdtempSync(join(tmpdir(), 'burnrate-shared-'))
  dirs.push(d)
  chmodSync(d, 0o1777) // as /tmp
  return d
}
/** Makes `file` another user's: given away (as root), else writable by anyone (as a planted file in a sticky folder may be). */
function planted(file: string, how: 'owner' | 'mode'): void {
  if (how === 'owner') chownSync(file, OTHER, OTHER)
  else chmodSync(file, 0o666)
}

describe('a data folder shared with other users', () => {
  for (const how of ['mode', 'owner'] as const) {
    it.runIf(how === 'mode' || asRoot)(`a config.yaml that is not the user's own (${how === 'owner' ? "another user's" : 'writable by anyone'}) is not read: start-up stops and says why`, () => {
      const dir = folder()
      const file = join(dir, 'config.yaml')
      writeFileSync(file, 'providers:\n  openai:\n    base_url: http://127.0.0.1:9/v1\n')
      planted(file, how)
      expect(() => loadConfig({ dataDir: dir }, {})).toThrow(how === 'owner' ? /config .*config\.yaml: not read, it belongs to another user \(uid 65534\)/ : /not read, any user may write it/)
      // Named explicitly, it is the user's choice.
      expect(loadConfig({ dataDir: dir, config: file }, {}).providers.openai.base_url).toBe('http://127.0.0.1:9/v1')
    })

    it.runIf(how === 'mode' || asRoot)(`a spill file that is not the user's own (${how}) is not recorded, and the server starts`, async () => {
      const dir = folder()
      const spill = join(dir, 'ledger-spill-1.jsonl')
      writeFileSync(spill, JSON.stringify(makeCall({ ts: Date.now(), cost_usd: 4999, agent: 'planted' })) + '\n')
      planted(spill, how)
      const t = await startTestServer({}, undefined, dir)
      servers.push(t)
      const db = new Database(t.dbFile, { readonly: true })
      try {
        expect(db.prepare("SELECT count(*) FROM calls WHERE agent = 'planted'").pluck().get()).toBe(0)
      } finally {
        db.close()
      }
    })
    it.runIf(how === 'mode' || asRoot)(`a server.lock that is not the user's own (${how}) names no server: the CLI reads the file, and the listener it names gets no token`, async () => {
      const seen: string[] = []
      const impostor: Server = createServer((req, res) => {
        seen.push(`${req.url} ${req.headers.authorization ?? ''}`)
        res.setHeader('content-type', 'application/json')
        res.end(req.url === '/api/health' ? '{"status":"ok","version":"9.9.9"}' : '{"today_usd":4242,"today_requests":1}')
      })
      await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r))
      try {
        const port = (impostor.address() as { port: number }).port
        const dir = folder()
        const config = join(dir, 'config.yaml')
        writeFileSync(config, 'dashboard:\n  token: Victim-Dashboard-Token-5f1e9a27c3d8\n')
        // Another user's claim on the folder: a live process (pid 1) and their listener.
        const lock = join(dir, 'server.lock')
        writeFileSync(lock, JSON.stringify({ pid: 1, url: `http://127.0.0.1:${port}`, started_at: new Date().toISOString(), claim: 'x' }) + '\n')
        planted(lock, how)
        startLedger(dir) // a data folder named that holds no ledger is refused
        const r = await runCliCaptured('status', '--data-dir', dir, '--no-import', '--json')
        expect(r.code, r.out).toBe(0)
        expect(seen).toEqual([])
        expect(r.out).not.toContain('4242')
      } finally {
        await new Promise((r) => impostor.close(r))
      }
    })
    it.runIf(how === 'mode' || asRoot)(`agent-connections.json or a backup that is not the user's own (${how}) is not acted on: Disconnect never writes what another user put there into an agent's config`, () => {
      const dir = folder()
      chmodSync(dir, 0o777) // a shared team folder: anyone may add and replace files
      const home = mkdtempSync(join(tmpdir(), 'burnrate-shared-home-'))
      dirs.push(home)
      const config = join(home, '.codex', 'config.toml')
      mkdirSync(join(home, '.codex'))
      writeFileSync(config, 'model = "gpt-5-codex"\n')
      const conn = () => new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir: dir })
      // A record Burnrate never made: Codex's openai_base_url "was" the other user's listener.
      const state = join(dir, 'agent-connections.json')
      const record = { key: ['openai_base_url'], had: true, previous: 'http://attacker.example/v1', created: [] }
      const file = { path: config, existed: true, backup: null, written_sha256: '', written_copy: null, keys: [record] }
      writeFileSync(state, JSON.stringify({ version: 1, connections: { codex: { agent: 'codex', url: 'http://127.0.0.1:8787', connected_at: new Date().toISOString(), files: [file] } } }))
      planted(state, how)
      expect(() => conn().disconnect('codex')).toThrow(/agent-connections\.json.* not read, (it belongs to another user|any user may write it)/)
      expect(readFileSync(config, 'utf8')).not.toContain('attacker')

      // The user's own record, whose backup another user replaced: not put back.
      rmSync(state)
      conn().connect('codex', 'http://127.0.0.1:8787')
      const own = JSON.parse(readFileSync(state, 'utf8'))
      const backup = join(dir, 'agent-backups', own.connections.codex.files[0].backup)
      rmSync(backup)
      writeFileSync(backup, 'openai_base_url = "http://attacker.example/v1"\n')
      planted(backup, how)
      conn().disconnect('codex')
      expect(readFileSync(config, 'utf8')).toBe('model = "gpt-5-codex"\n')
    })
    it.runIf(how === 'mode' || asRoot)(`a prices.json that is not the user's own (${how}) is not used: calls are priced from the bundled data`, async () => {
      const dir = folder()
      // The bundled data with every Anthropic price a thousandth of what it is.
      const cheap = (JSON.parse(JSON.stringify(await waitForUpdate())) as any[]).map((p) =>
        p.id !== 'anthropic' ? p : { ...p, models: p.models.map((m: any) => ({ ...m, prices: JSON.parse(JSON.stringify(m.prices), (k, v) => (typeof v === 'number' && k !== 'start' ? v / 1000 : v)) })) },
      )
      const prices = join(dir, 'prices.json')
      const now = new Date().toISOString()
      writeFileSync(prices, JSON.stringify({ updated_at: now, fetched_at: now, providers: cheap }))
      planted(prices, how)
      const upstream = await startMockUpstream(() => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'msg_x', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 100_000, output_tokens: 10_000 } }),
      }))
      try {
        const t = await startTestServer({}, upstream.url, dir)
        servers.push(t)
        const row = await recorded(t, () =>
          postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'sk-ant-shared-folder-prices-0001' }),
        )
        // 100k input at $3 + 10k output at $15 per million.
        expect(row.cost_usd).toBeCloseTo(0.45, 9)
        expect(t.server.context.prices!.updater.status().source).toBe('bundled')
      } finally {
        await upstream.close()
      }
    })
  }
})
