import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { eventually, request } from '../support/http'
import { type Agent, KEYS, README, exportsOf, jsonLines, lastId, mock, newAgent, observed, relay, rowsAfter, run, settled, snippet, t, turn, useSuite } from './harness'
import { CLAUDE_PLAN, CODE_ASSIST_QUOTA, CODEX_PLAN, type Exchange, VERTEX_TOKEN } from './mock-upstream'

/**
 * The real agent CLIs, pinned in ./package.json, run non-interactively through a running Burnrate
 * against a loopback mock upstream, each set up with exactly the lines of the dashboard's Connect
 * panel (src/renderer/src/lib/setup-snippets.ts), which the README repeats. For each: a new
 * session, the same session resumed, and a second new session. Every recorded call must be a 200
 * with the CLI as its agent, the CLI's own session id, the tokens the mock returned, the published
 * price, and bodies that went both ways byte for byte.
 */


useSuite()

/**
 * The agent's own logs (`burnrate import`) imported into an empty ledger, with no proxied call to
 * match them to (the agent run without Burnrate): what each of its calls is counted as, [provider, billing].
 */
async function importedLogs(agent: Agent, kind: 'codex' | 'claude-code'): Promise<[string, string][]> {
  return (await importedCalls(agent, kind)).map((r) => [r.provider, r.billing])
}

/**
 * The agent's own logs imported beside the proxy, into a copy of the ledger it recorded into
 * (`burnrate import` on the same data folder): every logged call is its proxied twin, matched,
 * none imported (counted twice).
 */
async function importedBeside(agent: Agent, kind: 'gemini-cli' | 'claude-code' | 'codex'): Promise<{ imported: number; matched: number }> {
  await t.server.ledger.flushed()
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-agents-beside-'))
  const file = join(dir, 'burnrate.db')
  t.server.db.exec(`VACUUM INTO '${file.replace(/'/g, "''")}'`)
  const db = openDatabase(file)
  const logs = { 'gemini-cli': join(agent.home, '.gemini', 'tmp'), 'claude-code': join(agent.home, '.claude', 'projects'), codex: join(agent.home, '.codex', 'sessions') }[kind]
  try {
    return await importLogs(db, { agent: kind, paths: [logs], pricer: new Pricer(), now: Date.now() + 3_600_000 })
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The same, each imported call's row. */
async function importedCalls(agent: Agent, kind: 'codex' | 'claude-code'): Promise<any[]> {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-agents-import-'))
  const db = openDatabase(join(dir, 'burnrate.db'))
  const logs = kind === 'codex' ? join(agent.home, '.codex', 'sessions') : join(agent.home, '.claude', 'projects')
  try {
    const s = await importLogs(db, { agent: kind, paths: [logs], pricer: new Pricer(), now: Date.now() + 3_600_000 })
    expect(s.imported).toBeGreaterThan(0)
    return db.prepare('SELECT provider, billing, model, endpoint, input_tokens, output_tokens, cost_usd FROM calls ORDER BY id').all()
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}


/** Claude Code with telemetry, updates, error reports and other traffic of its own off. */
const CLAUDE_QUIET = { DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }

/** Gemini CLI's settings in the agent's HOME: how it logs in (`gemini-api-key`, `oauth-personal`), telemetry and updates off. */
function geminiSettings(agent: Agent, authType: string): void {
  mkdirSync(join(agent.home, '.gemini'), { recursive: true })
  writeFileSync(
    join(agent.home, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: authType } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    }),
  )
}

/** Application Default Credentials from a metadata server, as on a Google Cloud VM: the mock's (Vertex AI's access token). */
function googleCredentials(): Record<string, string> {
  return { GCE_METADATA_HOST: new URL(mock.url).host }
}


/** Claude Sonnet, Opus and Haiku 4.5 and later, and every Claude 5 and later: the models a Vertex AI region bills 10% higher. */
const NEWER_CLAUDE = /^claude-(?:[a-z]+-)?(?:4-(?:[5-9]|\d\d)|[5-9](?:-\d{1,2})?)(?=$|[-@])/

describe('the real agent CLIs through Burnrate', () => {
  it('Claude Code: new, resumed and new sessions, each under its session_id; costs equal its own', async () => {
    const agent = newAgent('claude', {
      ...exportsOf(snippet('claude-code', 0)),
      ANTHROPIC_API_KEY: KEYS.anthropic,
      ...CLAUDE_QUIET,
    })
    const ask = (extra: string[], prompt: string) => turn(agent, 'claude', ['-p', ...extra, '--output-format', 'json', prompt], 'claude-code')
    const first = await ask([], 'Say hello.')
    const r1 = JSON.parse(first.out.stdout)
    expect(first.session).toBe(r1.session_id)
    expect(r1.result).toContain('Burnrate mock answer')
    // What Claude Code itself computes is what Burnrate recorded.
    expect(first.rows.reduce((s, r) => s + r.cost_usd, 0)).toBeCloseTo(r1.total_cost_usd, 9)
    // The folder it ran in is the calls' project (its system prompt states it; a side call, such as a title, may not).
    expect(first.rows.some((r) => r.project === agent.cwd), `a call under project ${agent.cwd}: ${JSON.stringify(first.rows.map((r) => r.project))}`).toBe(true)

    const resumed = await ask(['--resume', r1.session_id], 'Say it again.')
    expect(JSON.parse(resumed.out.stdout).session_id).toBe(r1.session_id)
    expect(resumed.session).toBe(r1.session_id)

    const second = await ask([], 'Something new.')
    const r3 = JSON.parse(second.out.stdout)
    expect(second.session).toBe(r3.session_id)
    expect(second.session).not.toBe(r1.session_id)
    // Its own logs, imported where the proxy did not see them: API money; beside it, its calls.
    const imported = await importedLogs(agent, 'claude-code')
    expect(imported.length).toBeGreaterThan(0)
    for (const r of imported) expect(r).toEqual(['anthropic', 'api'])
    expect(await importedBeside(agent, 'claude-code')).toMatchObject({ imported: 0, matched: imported.length })
  })

  it('Claude Code: a budget refusal is reported at once and not retried after its Retry-After', async () => {
    const agent = newAgent('claude-blocked', {
      ...exportsOf(snippet('claude-code', 0)),
      ANTHROPIC_API_KEY: 'sk-blocked-burnrate-suite-0000000008',
      ...CLAUDE_QUIET,
    })
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    // Stranded (retrying), it is killed by run()'s timer: code null.
    const out = await run(agent, 'claude', ['-p', '--output-format', 'json', 'Say hello.'])
    const said = out.stdout + out.stderr
    expect(out.code, said.slice(-3000)).not.toBeNull()
    expect(out.code).not.toBe(0)
    const result = JSON.parse(out.stdout)
    expect(result).toMatchObject({ is_error: true, api_error_status: 429, api_error_type: 'budget_exceeded' })
    expect(result.result).toMatch(/budget rule "sk-blocked-\*"/)
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    // Its turn (and a side call of its own, if it makes one): no retries (x-should-retry: false).
    expect(rows.length, JSON.stringify(rows.map((r) => [r.model, r.status]))).toBeLessThanOrEqual(2)
    for (const r of rows) expect(r).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'claude-code', cost_usd: 0 })
  })

  it("Claude Code on DeepSeek's Anthropic-compatible API: the README's lines, its calls through /deepseek/anthropic, recorded under deepseek at DeepSeek's price", async () => {
    // The README's block, run by a shell with this suite's address and a key in place of the placeholder.
    const block = /```sh\n(# DeepSeek;[^]*?)\nclaude\n```/.exec(README)
    expect(block, 'README shows the DeepSeek lines').not.toBeNull()
    const script = block![1].replaceAll('http://127.0.0.1:8787', relay.url).replace('<your DeepSeek key>', 'sk-deepseek-burnrate-suite-0000000004')
    const vars = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_MODEL', 'ANTHROPIC_SMALL_FAST_MODEL']
    const out = execFileSync('sh', ['-c', `${script}\nprintf '%s\\n' ${vars.map((v) => `"$${v}"`).join(' ')}`], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' }).split('\n')
    const env = Object.fromEntries(vars.map((v, i) => [v, out[i]]))
    expect(env.ANTHROPIC_BASE_URL).toBe(`${relay.url}/deepseek/anthropic`)
    const agent = newAgent('claude-deepseek', { ...env, ...CLAUDE_QUIET })
    const { exchanges, rows } = await turn(agent, 'claude', ['-p', '--output-format', 'json', 'Say hello.'], 'claude-code')
    const calls = exchanges.filter((e) => e.usage)
    expect(calls.length).toBeGreaterThan(0)
    for (const e of calls) {
      expect(e.url.split('?')[0]).toBe('/anthropic/v1/messages')
      expect(e.headers.authorization).toBe('Bearer sk-deepseek-burnrate-suite-0000000004')
      expect(e.model).toBe('deepseek-chat')
    }
    for (const r of rows.filter((x) => x.endpoint === 'messages')) expect(r).toMatchObject({ provider: 'deepseek', model: 'deepseek-chat', priced: 1 })
    expect(rows.reduce((s, r) => s + r.cost_usd, 0)).toBeGreaterThan(0)
  })

  it('Claude Code on Vertex AI: its Google token and its Claude calls through /vertex, priced at Claude\'s list plus the region\'s 10%; its turns cost that over what it computes, its model checks recorded too', async () => {
    const agent = newAgent('claude-vertex', {
      ...exportsOf(snippet('claude-code', 2)),
      CLAUDE_CODE_USE_VERTEX: '1',
      ANTHROPIC_VERTEX_PROJECT_ID: 'burnrate-suite-project',
      CLOUD_ML_REGION: 'us-east5',
      ...googleCredentials(),
      ...CLAUDE_QUIET,
    })
    // Through a region (us-east5), Vertex AI bills Claude Sonnet 4.5 and every later model 10% above its list.
    const premium = (model: string) => (NEWER_CLAUDE.test(model) ? 1.1 : 1)
    const ask = (extra: string[], prompt: string) => turn(agent, 'claude', ['-p', ...extra, '--output-format', 'json', prompt], 'claude-code', {}, premium)
    const first = await ask([], 'Say hello.')
    const r1 = JSON.parse(first.out.stdout)
    expect(r1.result).toContain('Burnrate mock answer')
    expect(first.session).toBe(r1.session_id)
    for (const e of first.exchanges) {
      expect(e.url).toMatch(/^\/v1\/projects\/burnrate-suite-project\/locations\/us-east5\/publishers\/anthropic\/models\/[^/]+:(rawPredict|streamRawPredict)$/)
      expect(e.headers.authorization).toBe(`Bearer ${VERTEX_TOKEN}`)
    }
    expect(first.exchanges.some((e) => e.url.endsWith(':streamRawPredict'))).toBe(true)
    for (const r of first.rows) expect(r).toMatchObject({ provider: 'vertex', endpoint: 'messages', billing: 'api', priced: 1 })
    // Its turn is the streamed call, whose cost is what Claude Code itself computes. Before it, on
    // Vertex AI, Claude Code checks which models the project may use with one-token calls
    // (`:rawPredict`): billed calls, recorded, which its own total leaves out.
    const streamed = first.rows.filter((r) => r.streamed === 1)
    expect(streamed.length).toBeGreaterThan(0)
    // Claude Code's default model has the regional premium, which its own cost leaves out.
    expect(streamed.every((r) => NEWER_CLAUDE.test(r.model)), streamed.map((r) => r.model).join()).toBe(true)
    for (const r of streamed) expect(JSON.parse(r.usage_extra)).toMatchObject({ data_residency: true })
    expect(streamed.reduce((s, r) => s + r.cost_usd, 0)).toBeCloseTo(r1.total_cost_usd * 1.1, 9)
    expect(first.exchanges.filter((e) => e.url.endsWith(':rawPredict'))).toHaveLength(first.rows.length - streamed.length)

    const resumed = await ask(['--resume', r1.session_id], 'Say it again.')
    expect(resumed.session).toBe(r1.session_id)
    const second = await ask([], 'Something new.')
    expect(second.session).toBe(JSON.parse(second.out.stdout).session_id)
    expect(second.session).not.toBe(r1.session_id)
  })

  it('Claude Code on Amazon Bedrock with a Bedrock API key: its calls through /bedrock/<region>, priced as their model ids (a geographic profile above the global rate Claude Code computes)', async () => {
    const key = 'ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS1zdWl0ZS0wMDEw'
    const agent = newAgent('claude-bedrock', {
      ...exportsOf(snippet('claude-code', 3)),
      CLAUDE_CODE_USE_BEDROCK: '1',
      AWS_REGION: 'us-east-1',
      AWS_BEARER_TOKEN_BEDROCK: key,
      ...CLAUDE_QUIET,
    })
    expect(agent.env.ANTHROPIC_BEDROCK_BASE_URL).toBe(`${relay.url}/bedrock/us-east-1`)
    const proxied: any[] = []
    for (const prompt of ['Say hello.', 'Something new.']) {
      const { out, exchanges, rows } = await observed(agent, 'claude', ['-p', '--output-format', 'json', prompt])
      proxied.push(...rows)
      const answer = JSON.parse(out.stdout)
      expect(answer.result).toContain('Burnrate mock answer')
      const calls = exchanges.filter((e) => e.usage)
      expect(calls.some((e) => e.url.endsWith('/invoke-with-response-stream'))).toBe(true)
      // The region is Burnrate's part of the address: the upstream sees Bedrock's own paths.
      for (const e of exchanges) expect(e.url).toMatch(/^\/(model\/[^/]+\/(invoke|invoke-with-response-stream)|inference-profiles\?.*)$/)
      for (const e of calls) expect(e.headers.authorization).toBe(`Bearer ${key}`)
      for (const r of rows) expect(r, `row ${JSON.stringify(r)}`).toMatchObject({ provider: 'bedrock', status: 200, error: null, estimated: 0 })
      for (const e of calls) {
        const r = rows.find((x) => x.input_tokens === e.usage!.input)
        expect(r, `a row with the ${e.usage!.input} input tokens the mock returned`).toBeDefined()
        expect(r).toMatchObject({ model: e.model, endpoint: 'invoke', output_tokens: e.usage!.output, cache_read_tokens: e.usage!.cacheRead, agent: 'claude-code', session: answer.session_id, billing: 'api', priced: 1 })
        const price = calcPrice({ input_tokens: e.usage!.input, cache_read_tokens: e.usage!.cacheRead, output_tokens: e.usage!.output }, e.model, { providerId: 'aws' })
        expect(r.cost_usd).toBeCloseTo(Number(price!.total_price), 12)
      }
      // Its turn is the streamed call (the one-token model checks before it are left out of its
      // total). Claude Code prices it at the global rate; through a geographic profile (`us.`) AWS
      // bills 10% more for newer Claude models, and that is what Burnrate records.
      const streamed = calls.filter((e) => e.url.endsWith('/invoke-with-response-stream'))
      const at = (e: Exchange, model: string) => Number(calcPrice({ input_tokens: e.usage!.input, cache_read_tokens: e.usage!.cacheRead, output_tokens: e.usage!.output }, model, { providerId: 'aws' })!.total_price)
      expect(streamed.every((e) => e.model.startsWith('us.'))).toBe(true)
      expect(streamed.reduce((sum, e) => sum + at(e, e.model.replace(/^us\./, 'global.')), 0)).toBeCloseTo(answer.total_cost_usd, 9)
      const recordedTurn = rows.filter((r) => r.streamed === 1).reduce((sum, r) => sum + r.cost_usd, 0)
      expect(recordedTurn).toBeCloseTo(streamed.reduce((sum, e) => sum + at(e, e.model), 0), 12)
      expect(recordedTurn).toBeGreaterThan(answer.total_cost_usd)
      // Listing the inference profiles (the AWS SDK's own call, not Claude Code's): recorded at no cost.
      for (const r of rows.filter((x) => x.endpoint === 'other')) expect(r.cost_usd).toBe(0)
    }
    // Its own logs, imported where the proxy did not see them: Bedrock's calls at Bedrock's price, as the proxy recorded them.
    const imported = await importedCalls(agent, 'claude-code')
    expect(imported.length).toBeGreaterThan(0)
    for (const r of imported) {
      const twin = proxied.find((x) => x.input_tokens === r.input_tokens && x.output_tokens === r.output_tokens)
      expect(twin, `the proxied call of ${JSON.stringify(r)}`).toBeDefined()
      expect(r).toMatchObject({ provider: 'bedrock', billing: 'api', model: twin.model, endpoint: 'invoke' })
      expect(r.cost_usd).toBeCloseTo(twin.cost_usd, 12)
    }
  })

  it('Claude Code logged in with a Claude account (OAuth token): the same ANTHROPIC_BASE_URL, plan usage under its session, its 5h and 7d windows on /api/dashboard/plans', async () => {
    // CLAUDE_CODE_OAUTH_TOKEN is Claude Code's own way to take a Claude account's token without a
    // browser (`claude setup-token` prints one); a login through the browser sends the same.
    const agent = newAgent('claude-oauth', {
      ...exportsOf(snippet('claude-code', 0)),
      CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat01-burnrate-suite-claude-account-0007',
      ...CLAUDE_QUIET,
    })
    const r = await turn(agent, 'claude', ['-p', '--output-format', 'json', 'Say hello.'], 'claude-code')
    const out = JSON.parse(r.out.stdout)
    expect(out.result).toContain('Burnrate mock answer')
    expect(r.session).toBe(out.session_id)
    for (const e of r.exchanges) expect(e.headers.authorization).toBe('Bearer sk-ant-oat01-burnrate-suite-claude-account-0007')
    for (const row of r.rows) expect(row).toMatchObject({ provider: 'anthropic', billing: 'subscription' })
    const acct = ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).find((a) => a.provider === 'anthropic' && a.billing === 'subscription')
    expect(acct, 'the Claude plan is on /api/dashboard/plans').toBeDefined()
    const windows = Object.fromEntries(acct.windows.map((w: any) => [w.name, w.utilization]))
    expect(windows).toMatchObject(CLAUDE_PLAN)
    expect(acct.details).toMatchObject({ 'representative-claim': 'five_hour' })
    // Its own logs, imported where the proxy did not see them: plan usage, never API money.
    const imported = await importedLogs(agent, 'claude-code')
    expect(imported.length).toBeGreaterThan(0)
    for (const r of imported) expect(r).toEqual(['anthropic', 'subscription'])
  })

  it('Claude Code logged in through the browser: its token refreshed between two sessions, one plan account on /api/dashboard/plans', async () => {
    // What `claude` leaves after a browser login: the tokens in ~/.claude/.credentials.json and the
    // account in ~/.claude.json. Claude Code names the account in every Messages call's metadata.
    const agent = newAgent('claude-browser', { ...exportsOf(snippet('claude-code', 0)), ...CLAUDE_QUIET })
    mkdirSync(join(agent.home, '.claude'), { recursive: true })
    const login = (accessToken: string) =>
      writeFileSync(
        join(agent.home, '.claude', '.credentials.json'),
        JSON.stringify({ claudeAiOauth: { accessToken, refreshToken: 'sk-ant-ort01-burnrate-suite', expiresAt: Date.now() + 8 * 3600_000, scopes: ['user:inference', 'user:profile'], subscriptionType: 'max' } }),
      )
    writeFileSync(
      join(agent.home, '.claude.json'),
      JSON.stringify({ hasCompletedOnboarding: true, oauthAccount: { accountUuid: '0b6e3d3c-1111-4222-8333-944445555666', emailAddress: 'suite@example.invalid', organizationUuid: '7c0e3d3c-1111-4222-8333-944445555666' } }),
    )
    login('sk-ant-oat01-burnrate-suite-browser-login-0011')
    const first = await turn(agent, 'claude', ['-p', '--output-format', 'json', 'Say hello.'], 'claude-code')
    // Claude Code refreshes its access token every few hours (it cannot be pointed at a loopback
    // token endpoint, so the suite writes what a refresh leaves: a new token, the same account).
    login('sk-ant-oat01-burnrate-suite-browser-login-0022')
    const second = await turn(agent, 'claude', ['-p', '--output-format', 'json', 'Something new.'], 'claude-code')
    expect(second.session).not.toBe(first.session)
    expect(first.exchanges.every((e) => e.headers.authorization === 'Bearer sk-ant-oat01-burnrate-suite-browser-login-0011')).toBe(true)
    expect(second.exchanges.every((e) => e.headers.authorization === 'Bearer sk-ant-oat01-burnrate-suite-browser-login-0022')).toBe(true)
    for (const row of [...first.rows, ...second.rows]) expect(row).toMatchObject({ provider: 'anthropic', billing: 'subscription' })
    const accounts = ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).filter((a) => ['sk-…0011', 'sk-…0022'].includes(a.account_hint))
    expect(accounts, 'one account for the login, not one per token').toHaveLength(1)
    expect(Object.fromEntries(accounts[0].windows.map((w: any) => [w.name, w.utilization]))).toMatchObject(CLAUDE_PLAN)
  })

  for (const [setup, block, transport] of [
    ['openai_base_url (WebSocket)', 0, 'responses-ws'],
    ['custom provider (SSE)', 1, 'responses-sse'],
  ] as const) {
    it(`Codex CLI, ${setup}: new, resumed and new sessions, each under its thread id; no retries`, async () => {
      const agent = newAgent(`codex-${block}`, { CODEX_API_KEY: KEYS.openai, OPENAI_API_KEY: KEYS.openai })
      const codexHome = join(agent.home, '.codex')
      mkdirSync(codexHome, { recursive: true })
      writeFileSync(join(codexHome, 'config.toml'), `check_for_update_on_startup = false\n${snippet('codex', block)}\n\n[analytics]\nenabled = false\n`)
      const ask = async (args: string[]) => {
        const r = await turn(agent, 'codex', ['exec', '--skip-git-repo-check', '--json', ...args], 'codex')
        const thread = jsonLines(r.out.stdout).find((e) => e.type === 'thread.started')?.thread_id
        expect(thread).toBeTruthy()
        expect(r.session).toBe(thread)
        expect(r.exchanges.filter((e) => e.usage).every((e) => e.protocol === transport)).toBe(true)
        expect(jsonLines(r.out.stdout).some((e) => e.type === 'turn.completed')).toBe(true)
        expect(r.out.stderr).not.toMatch(/Reconnecting|Falling back/)
        return { ...r, thread }
      }
      const first = await ask(['Say hello.'])
      const resumed = await ask(['resume', first.thread, 'Say it again.'])
      expect(resumed.thread).toBe(first.thread)
      const second = await ask(['Something new.'])
      expect(second.thread).not.toBe(first.thread)
      // Its own logs, imported where the proxy did not see them: API money.
      const imported = await importedLogs(agent, 'codex')
      expect(imported.length).toBeGreaterThan(0)
      for (const r of imported) expect(r).toEqual(['openai', 'api'])
    })
  }

  for (const [setup, block] of [
    ['openai_base_url (WebSocket)', 0],
    ['custom provider (SSE)', 1],
  ] as const) {
  it(`Codex CLI review (\`codex exec review\`), ${setup}: its review sub-agent, a thread of its own, is recorded under the session its output names`, async () => {
    const agent = newAgent(`codex-review-${block}`, { CODEX_API_KEY: KEYS.openai, OPENAI_API_KEY: KEYS.openai })
    const codexHome = join(agent.home, '.codex')
    mkdirSync(codexHome, { recursive: true })
    writeFileSync(join(codexHome, 'config.toml'), `check_for_update_on_startup = false\n${snippet('codex', block)}\n\n[analytics]\nenabled = false\n`)
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=suite', '-c', 'user.email=suite@example.invalid', ...args], { cwd: agent.cwd, env: agent.env })
    git('init', '-q')
    writeFileSync(join(agent.cwd, 'a.txt'), 'one\n')
    git('add', 'a.txt')
    git('commit', '-qm', 'one')
    writeFileSync(join(agent.cwd, 'a.txt'), 'one\ntwo\n')
    const r = await turn(agent, 'codex', ['exec', '--json', 'review', '--uncommitted'], 'codex')
    const session = jsonLines(r.out.stdout).find((e) => e.type === 'thread.started')?.thread_id
    expect(session).toBeTruthy()
    // Codex sends the review's own thread as thread-id, the session it belongs to as session-id.
    expect(r.exchanges.every((e) => e.headers['session-id'] === session)).toBe(true)
    expect(r.exchanges.some((e) => e.usage && e.headers['x-openai-subagent'] === 'review' && e.headers['thread-id'] !== session)).toBe(true)
    expect(r.session).toBe(session)
  })
  }

  it('Codex CLI logged in with ChatGPT, the same openai_base_url = <burnrate>/v1 as an API key: plan calls reach the ChatGPT backend under its thread id, its x-codex windows on /api/dashboard/plans', async () => {
    // Codex 0.171 sends a ChatGPT login's calls to the configured openai_base_url over plain
    // HTTP (0.169 wanted https); Burnrate sees its chatgpt-account-id and passes them on to the
    // ChatGPT backend instead of OpenAI's API, which would refuse the login's token.
    {
      const agent = newAgent('codex-chatgpt', { CODEX_REFRESH_TOKEN_URL_OVERRIDE: `${mock.url}/oauth/token` })
      const codexHome = join(agent.home, '.codex')
      mkdirSync(codexHome, { recursive: true })
      // A ChatGPT login as `codex login` leaves it (codex-rs login: auth.json). The tokens are
      // fresh and far from expiry, so Codex does not refresh them; it only decodes their claims.
      const account = 'acct-burnrate-suite-0005'
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
      const now = Math.floor(Date.now() / 1000)
      const claims = { iat: now, exp: now + 10 * 86400, 'https://api.openai.com/auth': { chatgpt_plan_type: 'pro', chatgpt_account_id: account, chatgpt_user_id: 'user-burnrate-suite' } }
      const jwt = (p: object) => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(p)}.c3VpdGU`
      writeFileSync(
        join(codexHome, 'auth.json'),
        JSON.stringify({
          OPENAI_API_KEY: null,
          tokens: { id_token: jwt({ ...claims, email: 'suite@example.invalid', email_verified: true }), access_token: jwt(claims), refresh_token: 'rt-burnrate-suite', account_id: account },
          last_refresh: new Date().toISOString(),
        }),
      )
      // The Connect panel's (and README's) lines: the API key's openai_base_url, and
      // chatgpt_base_url so its account and plugin calls go through Burnrate too (nothing leaves loopback).
      writeFileSync(join(codexHome, 'config.toml'), `check_for_update_on_startup = false\n${snippet('codex', 0)}\n${snippet('codex', 2)}\n\n[analytics]\nenabled = false\n`)
      const beforeRow = lastId()
      const beforeEx = mock.exchanges.length
      const out = await run(agent, 'codex', ['exec', '--skip-git-repo-check', '--json', 'Say hello.'])
      expect(out.code, `codex exited ${out.code}\n${out.stdout.slice(-2000)}\n${out.stderr.slice(-3000)}`).toBe(0)
      const thread = jsonLines(out.stdout).find((e) => e.type === 'thread.started')?.thread_id
      expect(thread).toBeTruthy()
      expect(jsonLines(out.stdout).some((e) => e.type === 'turn.completed')).toBe(true)
      await settled()
      const calls = mock.exchanges.slice(beforeEx).filter((e) => e.usage)
      expect(calls.length).toBeGreaterThan(0)
      for (const e of calls) expect(e.url.split('?')[0]).toBe('/backend-api/codex/responses')
      // Its first choice, the WebSocket, worked: no reconnects, no fall back to SSE.
      expect(calls.every((e) => e.protocol === 'responses-ws')).toBe(true)
      expect(out.stdout + out.stderr).not.toMatch(/Reconnecting|Falling back/)
      const rows = (await eventually(() => {
        const r = rowsAfter(beforeRow).filter((x) => x.input_tokens > 0)
        return r.length >= calls.length ? r : undefined
      }, 15_000)) as any[]
      expect(rows).toHaveLength(calls.length)
      for (const r of rows) expect(r).toMatchObject({ provider: 'chatgpt', status: 200, error: null, agent: 'codex', billing: 'subscription', session: thread })
      for (const e of calls) expect(rows.find((r) => r.input_tokens === e.usage!.input)).toMatchObject({ model: e.model, output_tokens: e.usage!.output })
      // Every call through /chatgpt ended well (the account check, models, plugins included).
      // Its other calls through /chatgpt (account check, models, plugins, MCP; the mock answers
      // the ones it knows, 404 the rest, which Codex tolerates) are its plan's too, and cost nothing.
      for (const r of rowsAfter(beforeRow).filter((x) => x.endpoint !== 'responses')) {
        expect(r, `row ${JSON.stringify(r)}`).toMatchObject({ provider: 'chatgpt', agent: 'codex', billing: 'subscription', input_tokens: 0, cost_usd: 0 })
      }
      const plans = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
      const acct = plans.find((a) => a.provider === 'chatgpt')
      expect(acct).toMatchObject({ billing: 'subscription' })
      const windows = Object.fromEntries(acct.windows.map((w: any) => [w.name, w]))
      expect(windows['5h']).toMatchObject({ utilization: CODEX_PLAN.primary.usedPercent / 100, window_minutes: CODEX_PLAN.primary.windowMinutes })
      expect(windows['7d']).toMatchObject({ utilization: CODEX_PLAN.secondary.usedPercent / 100, window_minutes: CODEX_PLAN.secondary.windowMinutes })
      expect(Date.parse(windows['5h'].resets_at)).toBeGreaterThan(Date.now())
      expect(Date.parse(windows['7d'].resets_at)).toBeGreaterThan(Date.parse(windows['5h'].resets_at))
      // Its own logs, imported where the proxy did not see them: plan usage, never API money.
      const imported = await importedLogs(agent, 'codex')
      expect(imported.length).toBeGreaterThan(0)
      for (const r of imported) expect(r).toEqual(['chatgpt', 'subscription'])
    }
  })

  // Both Codex transports: its own OpenAI provider (WebSocket) and a provider of its own (SSE).
  const blockedCases: { transport: string; block: number; env: Record<string, string> }[] = [
    { transport: 'the WebSocket', block: 0, env: { CODEX_API_KEY: 'sk-blocked-burnrate-suite-0000000004' } },
    { transport: 'SSE (its own provider)', block: 1, env: { OPENAI_API_KEY: 'sk-blocked-burnrate-suite-0000000005' } },
  ]
  for (const c of blockedCases) {
    it(`Codex CLI over ${c.transport}: a budget refusal is reported at once and not retried`, async () => {
      const agent = newAgent(`codex-blocked-${c.block}`, c.env)
      mkdirSync(join(agent.home, '.codex'), { recursive: true })
      writeFileSync(join(agent.home, '.codex', 'config.toml'), `check_for_update_on_startup = false\n${snippet('codex', c.block)}\n\n[analytics]\nenabled = false\n`)
      const beforeRow = lastId()
      const beforeEx = mock.exchanges.length
      const out = await run(agent, 'codex', ['exec', '--skip-git-repo-check', '--json', 'Say hello.'])
      expect(out.code).not.toBe(0)
      const failed = jsonLines(out.stdout).find((e) => e.type === 'turn.failed')
      expect(failed?.error?.message, out.stdout.slice(-2000) + out.stderr.slice(-2000)).toMatch(/usage limit/i)
      expect(out.stdout + out.stderr).not.toMatch(/Reconnecting/)
      expect(mock.exchanges.length).toBe(beforeEx)
      await settled()
      const rows = (await eventually(() => {
        const r = rowsAfter(beforeRow)
        return r.length > 0 ? r : undefined
      }, 15_000)) as any[]
      // At most its prewarm and its turn: no retries after Retry-After.
      expect(rows.length).toBeLessThanOrEqual(2)
      for (const r of rows) expect(r).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'codex', cost_usd: 0 })
    })
  }

  it('Gemini CLI: sends no session id with an API key, so its turns share one inferred session', async () => {
    const agent = newAgent('gemini', {
      ...exportsOf(snippet('gemini-cli', 0)),
      GEMINI_API_KEY: KEYS.gemini,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    })
    geminiSettings(agent, 'gemini-api-key')
    const ask = (extra: string[], prompt: string) => turn(agent, 'gemini', ['-m', 'gemini-2.5-flash', ...extra, '-p', prompt, '--output-format', 'json'], 'gemini-cli')
    const first = await ask([], 'Say hello.')
    const out1 = JSON.parse(first.out.stdout)
    expect(out1.response).toContain('Burnrate mock answer')
    expect(first.exchanges.filter((e) => e.usage).every((e) => e.url.includes('alt=sse') || e.url.endsWith(':generateContent'))).toBe(true)
    const resumed = await ask(['--resume', 'latest'], 'Say it again.')
    const second = await ask([], 'Something new.')
    // Its own session ids never reach the wire: Burnrate infers one session for calls <30 min apart.
    expect(first.session).toMatch(/^auto-/)
    expect(resumed.session).toBe(first.session)
    expect(second.session).toBe(first.session)
    expect(JSON.parse(second.out.stdout).session_id).not.toBe(out1.session_id)
  })

  it('Gemini CLI on Vertex AI: its Google token and its Gemini calls through /vertex, priced at Gemini\'s price', async () => {
    const agent = newAgent('gemini-vertex', {
      ...exportsOf(snippet('gemini-cli', 0)),
      GOOGLE_GENAI_USE_VERTEXAI: 'true',
      GOOGLE_CLOUD_PROJECT: 'burnrate-suite-project',
      GOOGLE_CLOUD_LOCATION: 'us-central1',
      ...googleCredentials(),
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    })
    geminiSettings(agent, 'vertex-ai')
    const ask = (extra: string[], prompt: string) => turn(agent, 'gemini', ['-m', 'gemini-2.5-flash', ...extra, '-p', prompt, '--output-format', 'json'], 'gemini-cli')
    const first = await ask([], 'Say hello.')
    expect(JSON.parse(first.out.stdout).response).toContain('Burnrate mock answer')
    const calls = first.exchanges.filter((e) => e.usage)
    for (const e of calls) {
      expect(e.url).toMatch(/^\/v1beta1\/projects\/burnrate-suite-project\/locations\/us-central1\/publishers\/google\/models\/gemini-2\.5-flash:(streamGenerateContent\?alt=sse|generateContent)$/)
      expect(e.headers.authorization).toBe(`Bearer ${VERTEX_TOKEN}`)
    }
    for (const r of first.rows.filter((x) => x.input_tokens > 0)) expect(r).toMatchObject({ provider: 'vertex', model: 'gemini-2.5-flash', billing: 'api', priced: 1 })
    const second = await ask([], 'Something new.')
    expect(second.rows.every((r) => r.provider === 'vertex')).toBe(true)
    // Its own logs imported beside the proxy: each call is the proxy's vertex call, not counted again.
    const beside = await importedBeside(agent, 'gemini-cli')
    expect(beside).toMatchObject({ imported: 0, matched: 2 })
  })

  it('Gemini CLI logged in with Google (Gemini Code Assist): its calls reach Code Assist through Burnrate, under its own session id, as plan usage', async () => {
    // The same setup lines as with an API key; GOOGLE_CLOUD_ACCESS_TOKEN is Gemini CLI's own way
    // to take a Google login's access token without a browser (an OAuth login is the same to it).
    const agent = newAgent('gemini-google', {
      ...exportsOf(snippet('gemini-cli', 0)),
      GOOGLE_GENAI_USE_GCA: 'true',
      GOOGLE_CLOUD_ACCESS_TOKEN: 'ya29.burnrate-suite-google-login-0006',
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    })
    expect(agent.env.CODE_ASSIST_ENDPOINT).toBe(`${relay.url}/code-assist`)
    geminiSettings(agent, 'oauth-personal')
    // One row per call that reached Code Assist (its set-up, quota and experiment calls too), no other.
    const { out, exchanges, rows } = await observed(agent, 'gemini', ['-m', 'gemini-2.5-flash', '-p', 'Say hello.', '--output-format', 'json'])
    const answer = JSON.parse(out.stdout)
    expect(answer.response).toContain('Burnrate mock answer')
    const calls = exchanges.filter((e) => e.usage)
    expect(calls.length).toBeGreaterThan(0)
    for (const e of calls) expect(e.url.split('?')[0]).toMatch(/^\/v1internal:(streamGenerateContent|generateContent)$/)
    for (const r of rows) expect(r, `row ${JSON.stringify(r)}`).toMatchObject({ provider: 'code-assist', status: 200, error: null, agent: 'gemini-cli', billing: 'subscription', estimated: 0 })
    for (const e of calls) {
      const r = rows.find((x) => x.input_tokens === e.usage!.input)
      expect(r, `a row with the ${e.usage!.input} input tokens the mock returned`).toBeDefined()
      // The CLI's own session id (the one its JSON output names), not an inferred one.
      expect(r).toMatchObject({ model: e.model, output_tokens: e.usage!.output, cache_read_tokens: e.usage!.cacheRead, session: answer.session_id, priced: 1 })
      const price = calcPrice({ input_tokens: e.usage!.input, cache_read_tokens: e.usage!.cacheRead, output_tokens: e.usage!.output }, e.model, { providerId: 'google' })
      expect(r.cost_usd).toBeCloseTo(Number(price!.total_price), 12)
    }
    for (const r of rows.filter((x) => x.input_tokens === 0)) expect(r.cost_usd).toBe(0)
    // It asked Code Assist for its quotas: they are the plan's windows, one per model.
    expect(exchanges.some((e) => e.url.endsWith(':retrieveUserQuota'))).toBe(true)
    const acct = ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).find((a) => a.provider === 'code-assist')
    expect(acct).toMatchObject({ billing: 'subscription', account_hint: 'bur…ject' })
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.resets_at])).toEqual(
      CODE_ASSIST_QUOTA.map((b) => [b.modelId, expect.closeTo(1 - b.remainingFraction, 12), b.resetTime]),
    )
  })

  it('Gemini CLI: a budget refusal is reported at once with its message, not retried with backoff', async () => {
    const agent = newAgent('gemini-blocked', {
      ...exportsOf(snippet('gemini-cli', 0)),
      GEMINI_API_KEY: 'sk-blocked-burnrate-suite-0000000009',
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    })
    geminiSettings(agent, 'gemini-api-key')
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    // Retrying a 429 it takes for a transient one (10 attempts with backoff, minutes), it is killed at 120 s: code null.
    const out = await run(agent, 'gemini', ['-m', 'gemini-2.5-flash', '-p', 'Say hello.', '--output-format', 'json'], {}, 120_000)
    const said = out.stdout + out.stderr
    expect(out.code, said.slice(-3000)).not.toBeNull()
    expect(out.code).not.toBe(0)
    // It stops on a quota error it takes as final (a TerminalQuotaError), and shows Burnrate's message as it is.
    expect(said).toMatch(/TerminalQuotaError/)
    // Its JSON output (on stderr for an error): {"session_id", "error": {"type", "message", "code"}}.
    const at = said.lastIndexOf('{\n  "session_id"')
    expect(at, said.slice(-3000)).toBeGreaterThanOrEqual(0)
    const shown = JSON.parse(said.slice(at))
    expect(shown.error, said.slice(-3000)).toMatchObject({ code: 429 })
    expect(shown.error.message).toMatch(/^API key sk-…0009 has spent \$0\.00 of the daily limit of \$0\.00 set by budget rule "sk-blocked-\*"/)
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    // Its one call, refused once: no retries.
    expect(rows.map((r) => [r.status, r.error])).toEqual([[429, 'budget_exceeded']])
    expect(rows[0]).toMatchObject({ agent: 'gemini-cli', cost_usd: 0 })
  })

  it('opencode: new, continued and new sessions, each under its ses_ id', async () => {
    const agent = newAgent('opencode', {
      ANTHROPIC_API_KEY: KEYS.anthropic,
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    })
    const config = JSON.parse(snippet('opencode', 0))
    writeFileSync(join(agent.cwd, 'opencode.json'), JSON.stringify({ ...config, model: 'anthropic/claude-sonnet-4-5', autoupdate: false, share: 'disabled' }))
    const ask = async (extra: string[], prompt: string) => {
      const r = await turn(agent, 'opencode', ['run', '--format', 'json', ...extra, prompt], 'opencode')
      const id = jsonLines(r.out.stdout).find((e) => typeof e.sessionID === 'string')?.sessionID
      expect(id).toMatch(/^ses_/)
      expect(r.session).toBe(id)
      return { ...r, id }
    }
    const first = await ask([], 'Say hello.')
    const resumed = await ask(['--session', first.id], 'Say it again.')
    expect(resumed.id).toBe(first.id)
    const second = await ask([], 'Something new.')
    expect(second.id).not.toBe(first.id)
  })

  it('opencode: a budget refusal is reported at once and not retried after its Retry-After', async () => {
    const agent = newAgent('opencode-blocked', {
      ANTHROPIC_API_KEY: 'sk-blocked-burnrate-suite-0000000006',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    })
    const config = JSON.parse(snippet('opencode', 0))
    writeFileSync(join(agent.cwd, 'opencode.json'), JSON.stringify({ ...config, model: 'anthropic/claude-sonnet-4-5', autoupdate: false, share: 'disabled' }))
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    // Stranded (waiting out a daily Retry-After), it is killed by run()'s timer: code null.
    const out = await run(agent, 'opencode', ['run', '--format', 'json', 'Say hello.'])
    const said = (out.stdout + out.stderr).replace(/\u2060/g, '')
    expect(out.code, said.slice(-3000)).not.toBeNull()
    const failed = jsonLines(said).find((e) => e.type === 'error')
    expect(failed?.error?.data, said.slice(-3000)).toMatchObject({ statusCode: 403, isRetryable: false })
    expect(failed.error.data.message).toMatch(/budget rule "sk-blocked-\*"/)
    expect(JSON.parse(failed.error.data.responseBody).error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-blocked-*', period: 'daily' })
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    // Its turn (and its title's call, if it asks for one): no retries.
    expect(rows.length).toBeLessThanOrEqual(2)
    for (const r of rows) expect(r).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'opencode', cost_usd: 0 })
  })

  it("opencode's openai provider on the Responses WebSocket: a budget refusal is reported at once and not retried", async () => {
    // Its openai provider streams over the socket when the socket is turned on
    // (OPENCODE_EXPERIMENTAL_WEBSOCKETS) and it is logged in (auth.json), here with an API key.
    const agent = newAgent('opencode-ws-blocked', {
      OPENCODE_EXPERIMENTAL_WEBSOCKETS: 'true',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    })
    const data = join(agent.home, '.local', 'share', 'opencode')
    mkdirSync(data, { recursive: true })
    writeFileSync(join(data, 'auth.json'), JSON.stringify({ openai: { type: 'api', key: 'sk-blocked-burnrate-suite-0000000007' } }))
    const config = { provider: { openai: { options: { baseURL: `${relay.url}/v1` } } }, model: 'openai/gpt-5', autoupdate: false, share: 'disabled' }
    writeFileSync(join(agent.cwd, 'opencode.json'), JSON.stringify(config))
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    const beforeUpgrades = relay.upgrades.length
    // Stranded (waiting out a daily Retry-After), it is killed by run()'s timer: code null.
    const out = await run(agent, 'opencode', ['run', '--format', 'json', 'Say hello.'])
    const said = (out.stdout + out.stderr).replace(/\u2060/g, '')
    expect(relay.upgrades.slice(beforeUpgrades), said.slice(-3000)).toContain('/v1/responses')
    expect(out.code, said.slice(-3000)).not.toBeNull()
    const failed = jsonLines(said).find((e) => e.type === 'error')
    expect(failed?.error?.data, said.slice(-3000)).toMatchObject({ statusCode: 403, isRetryable: false })
    expect(failed.error.data.message).toMatch(/budget rule "sk-blocked-\*"/)
    expect(JSON.parse(failed.error.data.responseBody)).toMatchObject({ type: 'error', status: 403, error: { type: 'budget_exceeded', api_key_pattern: 'sk-blocked-*', period: 'daily' } })
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    // Its turn (and its title's call, over HTTP, if it asks for one): no retries.
    expect(rows.length).toBeLessThanOrEqual(2)
    for (const r of rows) expect(r).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'opencode', cost_usd: 0 })
  })
})
