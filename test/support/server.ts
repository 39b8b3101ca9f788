import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { DB_FILE } from '../../src/main/config/paths'
import { type Logger, silentLogger } from '../../src/main/log'
import { PROVIDERS, PROVIDER_NAMES } from '../../src/main/providers/registry'
import { type BurnrateServer, type CreateOptions, createBurnrate } from '../../src/main/server/server'
import { type MockUpstream, type Responder, startMockUpstream } from './mock-upstream'

/** The default agents' home of a test server, in its data dir. */
export const AGENTS_HOME = 'agents-home'

export interface TestServer {
  server: BurnrateServer
  url: string
  dir: string
  /**
   * The home folder whose agents its admin API connects and whose logs it watches: `agents-home`
   * in its data dir (empty until an agent is connected) unless the test named one (create.agentHome).
   */
  home: string
  dbFile: string
  configFile: string
  /** Stops the server (flushing the ledger). */
  stop(): Promise<void>
  /** Stops it and starts a new one on the same data dir and config. */
  restart(): Promise<TestServer>
  /** Stops it and removes its data dir. */
  cleanup(): Promise<void>
}

/**
 * A real server on 127.0.0.1 (a free port) with its database in a new temp dir. `config` is
 * written as YAML and loaded the way `npm start` loads it; every provider's base URL points
 * at `upstream` unless the config says otherwise. Its agents' home is a folder of its own in
 * its data dir (no agent on its PATH) unless `opts.create.agentHome` names one: a test never
 * connects, reads or watches the developer's own agents.
 */
export async function startTestServer(
  config: Record<string, any> = {},
  upstream?: string,
  dir?: string,
  opts: { log?: Logger; create?: Omit<CreateOptions, 'log'> } = {},
): Promise<TestServer> {
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), 'burnrate-test-'))
  // In the data dir: removed with it however a test removes it, and the same across a restart.
  const agentHome = opts.create?.agentHome ?? { home: join(dataDir, AGENTS_HOME), env: { PATH: '' }, platform: process.platform }
  // Price data is never fetched from the internet in tests (a test that wants it names a local server).
  const cfg: Record<string, any> = {
    ...config,
    server: { host: '127.0.0.1', port: 0, ...config.server },
    pricing: { auto_update: false, ...config.pricing },
  }
  if (upstream) {
    const providers: Record<string, any> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream) }
    // A provider's Anthropic-compatible API too: no test call ever leaves for the vendor.
    for (const p of PROVIDERS) if (p.anthropicApi) providers[p.name].anthropic_base_url = upstream + new URL(p.anthropicApi.defaultBaseUrl!).pathname.replace(/\/$/, '')
    for (const [k, v] of Object.entries(config.providers ?? {})) providers[k] = { ...providers[k], ...(v as object) }
    cfg.providers = providers
  }
  const configFile = join(dataDir, 'config.yaml')
  writeFileSync(configFile, stringify(cfg))
  // The idle collection (a full GC of this whole test process) only where a test asks for it.
  const server = createBurnrate(loadConfig({ config: configFile, dataDir }, {}), { idleCollection: false, ...opts.create, agentHome, log: opts.log ?? silentLogger })
  const url = await server.listen()
  let stopped = false
  const t: TestServer = {
    server,
    url,
    dir: dataDir,
    home: agentHome.home,
    dbFile: join(dataDir, DB_FILE),
    configFile,
    async stop() {
      if (stopped) return
      stopped = true
      await server.close(2000)
    },
    async restart() {
      await t.stop()
      return startTestServer(config, upstream, dataDir, opts)
    },
    async cleanup() {
      await t.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return t
}

/**
 * The mock's URL as each provider's base URL, keeping the path shape of the real one
 * (OpenAI's base ends in /v1), so the upstream paths tests see are the real ones.
 */
export function baseUrlFor(provider: string, upstream: string): string {
  const p = PROVIDERS.find((x) => x.name === provider)
  const real = p?.defaultBaseUrl ? new URL(p.defaultBaseUrl) : null
  return upstream + (real ? real.pathname.replace(/\/$/, '') : '')
}

/**
 * The set-up most proxy tests share: a mock upstream with its default answers and a server from
 * the sources pointed at it, started before the file's tests and stopped after them. Read
 * `upstream` and `t` inside the tests (they are set once the file's `beforeAll` has run).
 */
export function serverOverMockUpstream(config: Record<string, any> = {}): { readonly upstream: MockUpstream; readonly t: TestServer } {
  let upstream: MockUpstream | undefined
  let t: TestServer | undefined
  beforeAll(async () => {
    upstream = await startMockUpstream()
    t = await startTestServer(config, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })
  return {
    get upstream() {
      if (!upstream) throw new Error('the mock upstream is not started yet: read it inside a test')
      return upstream
    },
    get t() {
      if (!t) throw new Error('the test server is not started yet: read it inside a test')
      return t
    },
  }
}

/**
 * For files whose tests each start their own server and mock upstream: what a test starts
 * through these is stopped after it (the server first, its data dir removed), however it ended.
 */
export function serversPerTest(): {
  upstream(responder?: Responder): Promise<MockUpstream>
  server(...args: Parameters<typeof startTestServer>): Promise<TestServer>
} {
  const started: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const stop of started.splice(0).reverse()) await stop()
  })
  return {
    async upstream(responder) {
      const u = await startMockUpstream(responder)
      started.push(() => u.close())
      return u
    },
    async server(...args) {
      const t = await startTestServer(...args)
      started.push(() => t.cleanup())
      return t
    },
  }
}
