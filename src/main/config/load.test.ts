import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { ConfigError, loadConfig } from './load'
import { defaultDataDir } from './paths'

function withFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-cfg-'))
  const file = join(dir, 'burnrate.yaml')
  writeFileSync(file, text)
  return file
}

function errorOf(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error('expected a ConfigError')
}

describe('storage.url', () => {
  it('takes a postgres URL from the file, BURNRATE_DATABASE_URL winning, and refuses anything else without echoing a password', async () => {
    const { redactUrl } = await import('../storage/url')
    const file = withFile('storage:\n  url: postgres://ann:pw1@db.internal:5432/burnrate\n')
    expect(loadConfig({ config: file }, {}).storage.url).toBe('postgres://ann:pw1@db.internal:5432/burnrate')
    expect(loadConfig({ config: file }, { BURNRATE_DATABASE_URL: 'postgresql://bob:pw2@10.0.0.5/team' }).storage.url).toBe('postgresql://bob:pw2@10.0.0.5/team')
    expect(loadConfig({ dataDir: mkdtempSync(join(tmpdir(), 'burnrate-cfg-')) }, {}).storage.url).toBeNull()
    const mysql = errorOf(() => loadConfig({ config: withFile('storage:\n  url: mysql://u:SECRETPW@h/db\n') }, {}))
    expect(mysql).toMatch(/storage\.url: expected a postgres:\/\/ \(or postgresql:\/\/\) URL, not mysql:/)
    expect(mysql).not.toContain('SECRETPW')
    expect(errorOf(() => loadConfig({ config: file }, { BURNRATE_DATABASE_URL: 'not a url SECRETPW' }))).toMatch(/^BURNRATE_DATABASE_URL: expected a PostgreSQL URL/)
    expect(errorOf(() => loadConfig({ config: file }, { BURNRATE_DATABASE_URL: 'postgres://u:SECRETPW@h:5432/' }))).toMatch(/names no database/)
    expect(redactUrl('postgres://ann:p%40ss@db:5432/b?sslmode=require&password=x')).toBe('postgres://ann:***@db:5432/b?sslmode=require&password=***')
  })
})

describe('loadConfig', () => {
  it('gives defaults without a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-cfg-'))
    const c = loadConfig({ dataDir: dir }, {})
    expect(c.server).toMatchObject({ host: '127.0.0.1', port: 8787 })
    expect(c.data_dir).toBe(dir)
    expect(c.admin.enabled).toBe(false)
    expect(c.dashboard.enabled).toBe(true)
    expect(c.source).toBeNull()
    expect(c.timezone).toBeTruthy()
  })

  it('reads <data dir>/config.yaml when no file is named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-cfg-'))
    writeFileSync(join(dir, 'config.yaml'), 'server:\n  port: 9999\n')
    expect(loadConfig({}, { BURNRATE_DATA_DIR: dir }).server.port).toBe(9999)
  })

  it('lets flags beat environment beat file', () => {
    const file = withFile('server:\n  host: 0.0.0.0\n  port: 1111\n')
    expect(loadConfig({ config: file }, {}).server).toMatchObject({ host: '0.0.0.0', port: 1111 })
    expect(loadConfig({ config: file }, { BURNRATE_PORT: '2222', BURNRATE_HOST: '127.0.0.2' }).server).toMatchObject({ host: '127.0.0.2', port: 2222 })
    expect(loadConfig({ config: file, port: '3333' }, { BURNRATE_PORT: '2222' }).server.port).toBe(3333)
    expect(loadConfig({}, { BURNRATE_CONFIG: file }).source).toBe(file)
  })

  it('names the file, the key and what was expected for a wrong type', () => {
    const file = withFile('admin:\n  enabled: "yes"\n')
    const msg = errorOf(() => loadConfig({ config: file }, {}))
    expect(msg).toContain(file)
    expect(msg).toContain('admin.enabled')
    expect(msg).toContain('expected boolean')
  })

  it('refuses a budget pattern given twice (a pattern is a rule\'s identity), naming the file and both rules', () => {
    const file = withFile('budgets:\n  rules:\n    - { api_key_pattern: "*", daily_limit_usd: 5, action: warn }\n    - { api_key_pattern: "*", monthly_limit_usd: 50, action: block }\n')
    expect(errorOf(() => loadConfig({ config: file }, {}))).toBe(
      `config ${file}: budgets.rules[1].api_key_pattern: "*" is already the pattern of budgets.rules[0]; a pattern can have one rule`,
    )
  })

  it('refuses a webhook listed twice (each alert was POSTed to it twice), naming both entries without its secret path', () => {
    const secret = 'services/T0SECRET/B0SECRET/xoxSECRET'
    const file = withFile(
      `alerts:\n  webhooks:\n    - { url: "https://example.com/other" }\n    - { url: "https://hooks.slack.com/${secret}?k=SECRETQ", format: slack }\n    - { url: "https://HOOKS.slack.com:443/${secret}?k=SECRETQ" }\n`,
    )
    const msg = errorOf(() => loadConfig({ config: file }, {}))
    expect(msg).toBe(
      `config ${file}: alerts.webhooks[2].url: the same webhook as alerts.webhooks[1] (https://hooks.slack.com/…); each alert would be POSTed to it twice; list it once`,
    )
    expect(msg).not.toContain('SECRET')
    // Two paths on one host are two webhooks.
    const two = withFile('alerts:\n  webhooks:\n    - { url: "https://example.com/a" }\n    - { url: "https://example.com/b" }\n')
    expect(loadConfig({ config: two }, {}).alerts.webhooks).toHaveLength(2)
  })

  it('refuses one webhook listed twice with two passwords (or one with none): each alert would go to it twice', () => {
    const file = withFile(
      'alerts:\n  webhooks:\n    - { url: "https://ops:OLDPASS1@alerts.example.com/hook?x=SECRETQ" }\n    - { url: "https://ops:NEWPASS2@ALERTS.example.com:443/hook?x=SECRETQ#b" }\n',
    )
    const msg = errorOf(() => loadConfig({ config: file }, {}))
    expect(msg).toBe(
      `config ${file}: alerts.webhooks[1].url: the same webhook as alerts.webhooks[0] (https://alerts.example.com/…), with other credentials; each alert would be POSTed to it twice; list it once, with the credentials it takes`,
    )
    expect(msg).not.toMatch(/OLDPASS|NEWPASS|SECRET|ops:/)
    const bare = withFile('alerts:\n  webhooks:\n    - { url: "https://alerts.example.com/hook" }\n    - { url: "https://u:p@alerts.example.com/hook" }\n')
    expect(errorOf(() => loadConfig({ config: bare }, {}))).toContain('alerts.webhooks[1].url: the same webhook as alerts.webhooks[0]')
    // Two users of one host and path are still one destination; two paths are two webhooks.
    const two = withFile('alerts:\n  webhooks:\n    - { url: "https://a:p@example.com/a" }\n    - { url: "https://a:p@example.com/b" }\n')
    expect(loadConfig({ config: two }, {}).alerts.webhooks).toHaveLength(2)
  })

  it('takes a fast-tier price override, and names a speed it does not know', () => {
    const ok = withFile('pricing:\n  overrides:\n    - model: claude-opus-4-6\n      speed: fast\n      input_mtok: 30\n      output_mtok: 150\n')
    expect(loadConfig({ config: ok }, {}).pricing.overrides[0]).toMatchObject({ model: 'claude-opus-4-6', speed: 'fast', input_mtok: 30 })
    const bad = withFile('pricing:\n  overrides:\n    - model: claude-opus-4-6\n      speed: turbo\n      input_mtok: 30\n      output_mtok: 150\n')
    const msg = errorOf(() => loadConfig({ config: bad }, {}))
    expect(msg).toContain('pricing.overrides[0].speed')
    expect(msg).toContain('fast')
  })

  it('names an unknown key (a typo must not be ignored)', () => {
    const file = withFile('budgets:\n  rules:\n    - api_key_pattern: "sk-*"\n      daily_limit: 5\n      action: block\n')
    const msg = errorOf(() => loadConfig({ config: file }, {}))
    expect(msg).toContain(file)
    expect(msg).toContain('budgets.rules[0]')
    expect(msg).toContain('"daily_limit"')
  })

  it('reports YAML that does not parse with its line', () => {
    const file = withFile('server:\n  port: [1, 2\n')
    const msg = errorOf(() => loadConfig({ config: file }, {}))
    expect(msg).toContain(file)
    expect(msg).toMatch(/not valid YAML \(line \d+/)
  })

  it('refuses an unknown provider, a bad time zone, a bad port and a missing file', () => {
    expect(errorOf(() => loadConfig({ config: withFile('providers:\n  opneai: {}\n') }, {}))).toContain('providers.opneai: unknown provider')
    expect(errorOf(() => loadConfig({ config: withFile('timezone: Mars/Base\n') }, {}))).toContain('timezone: expected an IANA time zone')
    expect(errorOf(() => loadConfig({ port: 'eighty' }, { BURNRATE_DATA_DIR: mkdtempSync(join(tmpdir(), 'b-')) }))).toContain('--port')
    expect(errorOf(() => loadConfig({ config: '/nonexistent/burnrate.yaml' }, {}))).toContain('file not found')
  })

  it('refuses a price override for a provider Burnrate does not know: a misspelled name would never match a call, and calls would go on at the library price', () => {
    const msg = errorOf(() =>
      loadConfig({ config: withFile('pricing:\n  overrides:\n    - {provider: opneai, model: gpt-4o, input_mtok: 1, output_mtok: 2}\n') }, {}),
    )
    expect(msg).toContain('pricing.overrides[0].provider: unknown provider "opneai"')
    expect(msg).toContain('openai')
    const ok = loadConfig({ config: withFile('pricing:\n  overrides:\n    - {provider: openai, model: gpt-4o, input_mtok: 1, output_mtok: 2}\n') }, {})
    expect(ok.pricing.overrides[0].provider).toBe('openai')
  })

  it('refuses admin.enabled without a token', () => {
    const msg = errorOf(() => loadConfig({ config: withFile('admin:\n  enabled: true\n') }, {}))
    expect(msg).toContain('admin.token')
  })

  it('refuses a budget pattern with a * that is not trailing, and a rule with no limit', () => {
    expect(errorOf(() => loadConfig({ config: withFile('budgets:\n  rules:\n    - {api_key_pattern: "sk-*-x", daily_limit_usd: 1, action: block}\n') }, {}))).toContain(
      'budgets.rules[0].api_key_pattern',
    )
    expect(errorOf(() => loadConfig({ config: withFile('budgets:\n  rules:\n    - {api_key_pattern: "sk-*", action: warn}\n') }, {}))).toContain(
      'A rule needs at least one limit',
    )
  })

  it('checks the second-wave rule fields as the admin API does, naming the field', () => {
    const rule = (fields: string) => errorOf(() => loadConfig({ config: withFile(`budgets:\n  rules:\n    - {api_key_pattern: "sk-*", action: block, ${fields}}\n`) }, {}))
    expect(rule('window_hours: 5')).toContain('budgets.rules[0].window_limit_usd')
    expect(rule('window_limit_usd: 5')).toContain('budgets.rules[0].window_hours')
    expect(rule('daily_limit_usd: 1, reserve: worst')).toContain('reserve')
    expect(rule('daily_limit_usd: 1, alert_at_pct: [0, 0.5]')).toContain('alert_at_pct')
    expect(rule('daily_limit_usd: 1, model_pattern: "gpt-*-mini"')).toContain('model_pattern')
    expect(rule('requests_per_minute: 1.5')).toContain('requests_per_minute')
    const ok = loadConfig(
      { config: withFile('budgets:\n  week_start: sunday\n  rules:\n    - {api_key_pattern: "sk-*", action: block, window_hours: 5, window_limit_usd: 10, tokens_per_minute: 1000, agent: claude-code}\n') },
      {},
    )
    expect(ok.budgets.week_start).toBe('sunday')
    expect(ok.budgets.rules[0]).toMatchObject({ window_hours: 5, window_limit_usd: 10, tokens_per_minute: 1000, agent: 'claude-code' })
  })
})

describe('defaultDataDir', () => {
  it("matches Electron's userData folder on each OS", () => {
    expect(defaultDataDir('linux', {}, '/home/u')).toBe('/home/u/.config/Burnrate')
    expect(defaultDataDir('linux', { XDG_CONFIG_HOME: '/x' }, '/home/u')).toBe('/x/Burnrate')
    expect(defaultDataDir('darwin', {}, '/Users/u')).toBe('/Users/u/Library/Application Support/Burnrate')
    expect(defaultDataDir('win32', { APPDATA: 'C:\\Users\\u\\AppData\\Roaming' }, 'C:\\Users\\u')).toMatch(/Roaming[\\/]Burnrate$/)
  })
})

describe('start-up errors for hostile or mistaken config (one line, naming the key)', () => {
  const oneLine = (msg: string) => {
    expect(msg.split('\n')).toHaveLength(1)
    return msg
  }

  it('refuses a timeout that overflows Node timers instead of firing every call at once', () => {
    const msg = oneLine(errorOf(() => loadConfig({ config: withFile('upstream:\n  first_byte_timeout_ms: 99999999999\n') }, {})))
    expect(msg).toContain('upstream.first_byte_timeout_ms')
    expect(msg).toContain('2147483647')
    expect(loadConfig({ config: withFile('upstream:\n  idle_timeout_ms: 2147483647\n') }, {}).upstream.idle_timeout_ms).toBe(2147483647)
  })

  it('turns a YAML alias bomb into one line, not a stack trace', () => {
    const rows = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i)
      const next = String.fromCharCode(97 + i)
      rows.push(`${next}: &${next} [${Array(10).fill(`*${prev}`).join(',')}]`)
    }
    const msg = oneLine(errorOf(() => loadConfig({ config: withFile(rows.join('\n') + '\n') }, {})))
    expect(msg).toMatch(/not usable YAML/)
  })

  it('refuses regular-expression-looking key patterns in budgets and tenants', () => {
    let msg = oneLine(errorOf(() => loadConfig({ config: withFile('budgets:\n  rules:\n    - {api_key_pattern: "sk-.*", daily_limit_usd: 1, action: block}\n') }, {})))
    expect(msg).toContain('budgets.rules[0].api_key_pattern')
    expect(msg).toContain('regular expression')
    msg = oneLine(errorOf(() => loadConfig({ config: withFile('tenants:\n  key_mappings:\n    - {pattern: "^sk-", tenant: a}\n') }, {})))
    expect(msg).toContain('tenants.key_mappings[0].pattern')
  })

  it('refuses allowed_hosts and allowed_origins entries that can never match', () => {
    for (const bad of ['http://burnrate.internal', 'burnrate.internal/path', 'two words', 'host:99999']) {
      const msg = oneLine(errorOf(() => loadConfig({ config: withFile(`server:\n  allowed_hosts: [ok.internal, "${bad}"]\n`) }, {})))
      expect(msg).toContain('server.allowed_hosts[1]')
    }
    expect(loadConfig({ config: withFile('server:\n  allowed_hosts: [burnrate.internal, "box:8787", "[::1]:8787"]\n') }, {}).server.allowed_hosts).toHaveLength(3)
    const msg = oneLine(errorOf(() => loadConfig({ config: withFile('server:\n  allowed_origins: ["localhost:5173"]\n') }, {})))
    expect(msg).toContain('server.allowed_origins[0]')
    expect(loadConfig({ config: withFile('server:\n  allowed_origins: ["http://localhost:5173", "https://tool.example/"]\n') }, {}).server.allowed_origins).toHaveLength(2)
    const url = oneLine(errorOf(() => loadConfig({ config: withFile('server:\n  public_url: "https://burnrate.team.example/dashboard"\n') }, {})))
    expect(url).toContain('server.public_url')
    expect(loadConfig({ config: withFile('server:\n  public_url: "https://burnrate.team.example/"\n') }, {}).server.public_url).toBe('https://burnrate.team.example/')
  })

  it('refuses credentials, a query or a fragment in a provider base_url', () => {
    for (const url of ['https://user:pass@api.openai.com/v1', 'https://api.openai.com/v1?key=abc', 'https://api.openai.com/v1#x']) {
      const msg = oneLine(errorOf(() => loadConfig({ config: withFile(`providers:\n  openai:\n    base_url: "${url}"\n`) }, {})))
      expect(msg).toContain('providers.openai.base_url')
      expect(msg).not.toContain('pass@')
    }
  })
})

describe('waits a timer must hold', () => {
  it('refuses an alert or OTLP wait longer than a timer can wait (Node would fire it at once), and an OTLP interval under 100 ms', () => {
    const at = (yaml: string) => errorOf(() => loadConfig({ config: withFile(yaml) }, {}))
    expect(at('alerts:\n  backoff_ms: 3000000000\n')).toMatch(/alerts\.backoff_ms: expected at most 2147483647 \(about 24 days/)
    expect(at('alerts:\n  timeout_ms: 3000000000\n')).toMatch(/alerts\.timeout_ms: expected at most 2147483647/)
    expect(at('otel:\n  interval_ms: 3000000000\n')).toMatch(/otel\.interval_ms: expected at most 2147483647/)
    expect(at('otel:\n  interval_ms: 50\n')).toMatch(/otel\.interval_ms/)
    const ok = loadConfig({ config: withFile('alerts:\n  backoff_ms: 5000\n  retries: 20\notel:\n  interval_ms: 100\n') }, {})
    expect([ok.alerts.backoff_ms, ok.otel.interval_ms, ok.otel.timeout_ms]).toEqual([5000, 100, 10_000])
  })
})

describe("upstream.ca_file, taken from the config file's folder as data_dir is", () => {
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'

  /** `etc/config.yaml` naming `ca_file`, in a fresh folder; the working folder is elsewhere. */
  function layout(caFile: string): { dir: string; cfg: string } {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-cfg-'))
    mkdirSync(join(dir, 'etc', 'certs'), { recursive: true })
    const cfg = join(dir, 'etc', 'config.yaml')
    writeFileSync(cfg, `upstream:\n  ca_file: ${caFile}\n`)
    return { dir, cfg }
  }

  it('a relative path is in the config file\'s folder, whatever the working folder', () => {
    const { dir, cfg } = layout('certs/ca.pem')
    writeFileSync(join(dir, 'etc', 'certs', 'ca.pem'), PEM)
    expect(process.cwd()).not.toBe(join(dir, 'etc'))
    expect(loadConfig({ config: cfg }, {}).upstream.ca_file).toBe(join(dir, 'etc', 'certs', 'ca.pem'))
  })

  it('~/ is the home folder; an absolute path is kept', () => {
    const { dir, cfg } = layout('~/corp-ca.pem')
    writeFileSync(join(dir, 'corp-ca.pem'), PEM)
    vi.stubEnv('HOME', dir)
    try {
      expect(loadConfig({ config: cfg }, {}).upstream.ca_file).toBe(join(dir, 'corp-ca.pem'))
    } finally {
      vi.unstubAllEnvs()
    }
    writeFileSync(cfg, `upstream:\n  ca_file: ${join(dir, 'corp-ca.pem')}\n`)
    expect(loadConfig({ config: cfg }, {}).upstream.ca_file).toBe(join(dir, 'corp-ca.pem'))
  })

  it('one that is not there still loads, taken from the config file\'s folder: only the server, at start-up, needs the file (../server/ca-file.test.ts)', () => {
    const { dir, cfg } = layout('certs/missing.pem')
    const config = loadConfig({ config: cfg }, {})
    expect(config.upstream.ca_file).toBe(join(dir, 'etc', 'certs', 'missing.pem'))
    // As written, for the start-up error naming where it was looked for.
    expect(config.ca_file_as_written).toBe('certs/missing.pem')
    writeFileSync(cfg, `upstream:\n  ca_file: ${join(dir, 'nowhere.pem')}\n`)
    expect(loadConfig({ config: cfg }, {}).upstream.ca_file).toBe(join(dir, 'nowhere.pem'))
  })

  it('one an earlier release would have found in the working folder is taken from the config file\'s folder all the same', () => {
    // The working folder holds the file under the relative name; the config's folder does not.
    const { cfg } = layout('package.json')
    expect(loadConfig({ config: cfg }, {}).upstream.ca_file).toBe(join(dirname(cfg), 'package.json'))
  })
})

describe('YAML anchors and merge keys (<<) for repeated rules', () => {
  const load = (yaml: string) => loadConfig({ config: withFile(yaml) }, {})
  const RULES = 'budgets:\n  rules:\n    - &r\n      api_key_pattern: "sk-a*"\n      daily_limit_usd: 5\n      action: block\n    - <<: *r\n      api_key_pattern: "sk-b*"\n'

  it('a rule takes the keys of the anchored one, its own keys winning', () => {
    const rules = load(RULES).budgets.rules
    expect(rules).toHaveLength(2)
    expect(rules[1]).toMatchObject({ api_key_pattern: 'sk-b*', daily_limit_usd: 5, action: 'block' })
    expect(rules[0]).toMatchObject({ api_key_pattern: 'sk-a*', daily_limit_usd: 5, action: 'block' })
    // Several sources (the first listed wins), and a key given before the merge key wins too.
    const two = load('budgets:\n  rules:\n    - &a {api_key_pattern: "sk-a*", daily_limit_usd: 5, action: block}\n    - &w {api_key_pattern: "sk-w*", monthly_limit_usd: 9, action: warn}\n    - {api_key_pattern: "sk-c*", <<: [*w, *a]}\n    - {action: warn, <<: *a, api_key_pattern: "sk-d*"}\n')
    expect(two.budgets.rules[2]).toMatchObject({ api_key_pattern: 'sk-c*', daily_limit_usd: 5, monthly_limit_usd: 9, action: 'warn' })
    expect(two.budgets.rules[3]).toMatchObject({ api_key_pattern: 'sk-d*', daily_limit_usd: 5, action: 'warn' })
  })

  it('many rules can share one anchor', () => {
    const rows = Array.from({ length: 300 }, (_, i) => `    - {<<: *r, api_key_pattern: "sk-${i}-*"}`)
    const rules = load(RULES + rows.join('\n') + '\n').budgets.rules
    expect(rules).toHaveLength(302)
    expect(rules[301]).toMatchObject({ api_key_pattern: 'sk-299-*', daily_limit_usd: 5, action: 'block' })
  })

  it('keeps every check: a merged rule is checked as written out, a key twice is refused, a pattern merged unchanged is a duplicate', () => {
    expect(errorOf(() => load(RULES + '      daily_limit: 3\n'))).toContain('budgets.rules[1]: unknown key "daily_limit"')
    expect(errorOf(() => load(RULES + '      api_key_pattern: "sk-c*"\n'))).toMatch(/not valid YAML \(line 9, column 7\): Map keys must be unique/)
    expect(errorOf(() => load('budgets:\n  rules:\n    - &r {api_key_pattern: "sk-a*", daily_limit_usd: 5, action: block}\n    - <<: *r\n'))).toContain(
      'budgets.rules[1].api_key_pattern: "sk-a*" is already the pattern of budgets.rules[0]',
    )
  })

  it('anchors can be set under top-level keys starting with x- (ignored); elsewhere an x- key is unknown', () => {
    const cfg = load('x-rule: &r\n  daily_limit_usd: 5\n  action: block\nx-notes: [anything]\nbudgets:\n  rules:\n    - {<<: *r, api_key_pattern: "sk-a*"}\n    - {<<: *r, api_key_pattern: "sk-b*"}\n')
    expect(cfg.budgets.rules.map((r) => [r.api_key_pattern, r.daily_limit_usd, r.action])).toEqual([['sk-a*', 5, 'block'], ['sk-b*', 5, 'block']])
    expect(Object.keys(cfg).some((k) => k.startsWith('x-'))).toBe(false)
    expect(errorOf(() => load('budgets:\n  x-rule: {daily_limit_usd: 5}\n'))).toContain('budgets: unknown key "x-rule"')
  })

  it('names a short unknown key as it is: a quoted "<<" is no merge key', () => {
    const msg = errorOf(() => load('x-r: &r {daily_limit_usd: 5, action: block}\nbudgets:\n  rules:\n    - {"<<": *r, api_key_pattern: "sk-a*"}\n'))
    expect(msg).toContain('budgets.rules[0]: unknown key "<<"')
    expect(msg).toContain('without quotes')
  })

  it('an alias to no anchor set before it names its line and where to set one', () => {
    const msg = errorOf(() => load('budgets:\n  rules:\n    - {<<: *r, api_key_pattern: "sk-a*"}\n    - &r {api_key_pattern: "sk-b*", daily_limit_usd: 5, action: block}\n'))
    expect(msg).toMatch(/not usable YAML \(line 3, column 12\): Unresolved alias/)
    expect(msg).toContain('x-')
  })

  it('refuses a merge-key bomb, and an alias inside its own anchor, in one line', () => {
    const rows = [`a: &a {${Array.from({ length: 10 }, (_, i) => `k${i}: x`).join(', ')}}`]
    for (let l = 1; l < 12; l++) {
      const prev = String.fromCharCode(96 + l)
      const next = String.fromCharCode(97 + l)
      rows.push(`${next}: &${next} {${Array.from({ length: 10 }, (_, i) => `${next}${i}: {<<: *${prev}}`).join(', ')}}`)
    }
    for (const yaml of [rows.join('\n') + '\n', 'x-a: &a {<<: *a}\n', 'x-a: &a [1, *a]\n']) {
      const msg = errorOf(() => load(yaml))
      expect(msg.split('\n')).toHaveLength(1)
      expect(msg).toMatch(/not usable YAML/)
    }
  })
})
