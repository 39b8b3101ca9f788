import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { z } from 'zod'
import { checkRule } from '../budgets/check'
import { looksLikeRegex, patternProblem, shownPattern } from '../budgets/pattern'
import { splitHostPort } from '../security/hosts'
import { untrustedReason } from '../security/owned-file'
import { machineTimeZone } from '../time/zone'
import { PROVIDERS, PROVIDER_NAMES } from '../providers/registry'
import { CONFIG_FILE, DB_FILE, defaultDataDir } from './paths'
import { type Config, configSchema } from './schema'
import { repeatedWebhook } from './webhook-check'
import { readYaml } from './yaml-text'

/** A configuration problem that stops start-up; its message is meant for a person. */
export class ConfigError extends Error {
  override name = 'ConfigError'
  /**
   * `usage`: a bad value given on the command line or in the environment (a port that is not one),
   * which the command line exits 2 for (bad usage), where a config refused is a failure (1).
   */
  constructor(
    message: string,
    readonly usage = false,
  ) {
    super(message)
  }
}

export interface ConfigFlags {
  config?: string
  host?: string
  port?: number | string
  dataDir?: string
  /**
   * Where config.yaml is looked for, and the data folder unless the file's `data_dir` names
   * another, when neither `dataDir` nor BURNRATE_DATA_DIR is given: the desktop app's userData.
   * Default: the OS app-data folder (the same folder on every platform).
   */
  defaultDataDir?: string
}

/**
 * A key of the file as an error names it: cut after the first character no config key has, so
 * `token:<the token>` (a flow mapping `{token:x}` without its space reads as one key) is shown
 * `token:…`, and a key longer than any the config has (a token written as a key) by its start.
 * A key of up to 4 characters is shown whole.
 * The error is printed at start-up, and the desktop app writes it to its log file.
 */
function shownKey(key: string): string {
  // Too short to hide a token or password: `<<` (a merge key in quotes) is named as written.
  if (key.length <= 4) return key
  const odd = /[^A-Za-z0-9_.-]/.exec(key)
  const cut = odd ? `${key.slice(0, odd.index + 1)}…` : key
  return cut.length > 32 ? `${cut.slice(0, 12)}…` : cut
}

function describePath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else out += out ? `.${shownKey(String(p))}` : shownKey(String(p))
  }
  return out || '(top level)'
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = describePath(issue.path)
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `"${shownKey(k)}"`).join(', ')
    // Quoted, "<<" is a key like any other; only a plain << merges the keys of its alias.
    const merge = issue.keys.includes('<<') ? '; a merge key is written without quotes (<<: *name)' : ''
    return `${where}: unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}${merge}`
  }
  if (issue.code === 'invalid_type') {
    return `${where}: expected ${issue.expected}`
  }
  return `${where}: ${issue.message}`
}

export function parsePort(value: number | string, origin: string): number {
  const n = typeof value === 'number' ? value : Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65535 || (typeof value === 'string' && !/^\d+$/.test(value.trim()))) {
    throw new ConfigError(`${origin}: expected a port number from 0 to 65535, got "${value}"`, true)
  }
  return n
}

/** Reads and validates the YAML text of a config file; `file` is only used in messages. */
export function parseConfigText(text: string, file: string): z.output<typeof configSchema> {
  const read = readYaml(text)
  if (!read.ok) throw new ConfigError(`config ${file}: ${read.problem}`)
  const raw = read.value ?? {}
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`config ${file}: expected a mapping of keys at the top level`)
  }
  // docker-compose's convention: a top-level key starting with x- holds what the file's own
  // anchors need (`x-rule: &rule {...}`), and is no setting.
  for (const key of Object.keys(raw)) if (key.startsWith('x-')) delete (raw as Record<string, unknown>)[key]
  const result = configSchema.safeParse(raw)
  if (!result.success) {
    const lines = result.error.issues.map(describeIssue)
    throw new ConfigError(`config ${file}: ${lines.join('; ')}`)
  }
  const cfg = result.data
  for (const name of Object.keys(cfg.providers)) {
    if (!PROVIDER_NAMES.includes(name)) {
      throw new ConfigError(
        `config ${file}: providers.${shownKey(name)}: unknown provider; expected one of ${PROVIDER_NAMES.join(', ')}`,
      )
    }
  }
  for (const [i, o] of cfg.pricing.overrides.entries()) {
    // A "*" anywhere but once at the end is matched as part of the exact name, which no call has.
    if (o.model.indexOf('*') !== -1 && o.model.indexOf('*') !== o.model.length - 1) {
      throw new ConfigError(
        `config ${file}: pricing.overrides[${i}].model: ${JSON.stringify(o.model.slice(0, 100))}: "*" is only allowed once, at the end (a whole model name, or a prefix followed by "*")`,
      )
    }
    // Matched as a name, "^gpt-4o$" or "claude-.*" (a regular expression) would price no call either.
    if (looksLikeRegex(o.model)) {
      throw new ConfigError(
        `config ${file}: pricing.overrides[${i}].model: ${JSON.stringify(o.model.slice(0, 100))} looks like a regular expression; a model is a whole name, or a prefix followed by one "*" (e.g. "claude-sonnet-4-5*")`,
      )
    }
    // A misspelled provider would match no call, silently: calls would go on at the library price.
    if (o.provider !== undefined && !PROVIDER_NAMES.includes(o.provider)) {
      throw new ConfigError(
        `config ${file}: pricing.overrides[${i}].provider: unknown provider "${o.provider.slice(0, 100)}"; expected one of ${PROVIDER_NAMES.join(', ')}`,
      )
    }
    // The first entry that matches prices a call: one an earlier entry covers would never price one.
    const earlier = cfg.pricing.overrides.slice(0, i).findIndex((e) => overrideCovers(e, o))
    if (earlier !== -1) {
      const e = cfg.pricing.overrides[earlier]
      throw new ConfigError(
        `config ${file}: pricing.overrides[${i}]: never prices a call: pricing.overrides[${earlier}] (model ${JSON.stringify(e.model.slice(0, 100))}, ${e.provider ? `provider ${e.provider}` : 'any provider'}) matches every call it would, and the first entry that matches prices a call; put the narrower one first`,
      )
    }
  }
  for (const [name, p] of Object.entries(cfg.providers)) {
    // Read by one provider only: under another, its calls would be priced by the name it maps, silently.
    for (const [key, only] of [['deployments', 'azure'], ['profiles', 'bedrock']] as const) {
      if (p[key] !== undefined && name !== only) {
        throw new ConfigError(`config ${file}: providers.${name}.${key}: only providers.${only} has ${key}; move it there or remove it`)
      }
    }
    if (p.base_url) checkBaseUrl(p.base_url, `config ${file}: providers.${name}.base_url`)
    if (p.anthropic_base_url) {
      // Set where the provider has no such API it would route nothing: a setting that silently does nothing.
      if (!PROVIDERS.find((x) => x.name === name)?.anthropicApi) {
        throw new ConfigError(`config ${file}: providers.${name}.anthropic_base_url: ${name} has no Anthropic-compatible API; only ${PROVIDERS.filter((x) => x.anthropicApi).map((x) => x.name).join(', ')} do`)
      }
      checkBaseUrl(p.anthropic_base_url, `config ${file}: providers.${name}.anthropic_base_url`)
    }
  }
  for (const [i, h] of cfg.server.allowed_hosts.entries()) {
    if (!splitHostPort(h.trim())) {
      throw new ConfigError(
        `config ${file}: server.allowed_hosts[${i}]: "${h.slice(0, 100)}" is not a host name; expected "name" or "name:port" (no scheme, path or spaces)`,
      )
    }
  }
  for (const [i, o] of cfg.server.allowed_origins.entries()) {
    if (!isOrigin(o.trim())) {
      throw new ConfigError(
        `config ${file}: server.allowed_origins[${i}]: "${o.slice(0, 100)}" is not an origin; expected "http://name:port" or "https://name" (no path)`,
      )
    }
  }
  const publicUrl = cfg.server.public_url
  if (publicUrl !== undefined && !isOrigin(publicUrl.trim())) {
    throw new ConfigError(
      `config ${file}: server.public_url: "${publicUrl.slice(0, 100)}" is not an origin; expected the address browsers open Burnrate at, such as "https://burnrate.team.example" (no path)`,
    )
  }
  const patterns = new Map<string, number>()
  for (const [i, rule] of cfg.budgets.rules.entries()) {
    checkPattern(rule.api_key_pattern, `config ${file}: budgets.rules[${i}].api_key_pattern`)
    // A rule's pattern is its identity (the admin API's DELETE ?pattern=, a runtime rule replacing it).
    const first = patterns.get(rule.api_key_pattern)
    if (first !== undefined) {
      throw new ConfigError(
        `config ${file}: budgets.rules[${i}].api_key_pattern: "${shownPattern(rule.api_key_pattern)}" is already the pattern of budgets.rules[${first}]; a pattern can have one rule`,
      )
    }
    patterns.set(rule.api_key_pattern, i)
    // The same checks as a rule POSTed to the admin API (a limit present, a window with its hours, ...).
    const checked = checkRule(rule)
    if (!checked.ok) {
      throw new ConfigError(`config ${file}: budgets.rules[${i}]${checked.param ? `.${checked.param}` : ''}: ${checked.message}`)
    }
  }
  // Without a rate there is nothing to exceed: a block asked for would never refuse a call.
  if (cfg.runaway.spend_rate.action === 'block' && cfg.runaway.spend_rate.usd_per_minute === null) {
    throw new ConfigError(`config ${file}: runaway.spend_rate.usd_per_minute: expected a number of US dollars because runaway.spend_rate.action is block; without it nothing is blocked`)
  }
  const twice = repeatedWebhook(cfg.alerts.webhooks.map((w) => w.url))
  if (twice) throw new ConfigError(`config ${file}: ${twice}`)
  for (const [i, m] of cfg.tenants.key_mappings.entries()) {
    checkPattern(m.pattern, `config ${file}: tenants.key_mappings[${i}].pattern`)
  }
  return cfg
}

type Override = Config['pricing']['overrides'][number]

/** Whether every call `b` matches (its speed, provider and model; names match in any case) `a` matches too. */
function overrideCovers(a: Override, b: Override): boolean {
  if ((a.speed ?? 'standard') !== (b.speed ?? 'standard')) return false
  if (a.provider !== undefined && a.provider !== b.provider) return false
  const am = a.model.toLowerCase()
  const bm = b.model.toLowerCase()
  return am.endsWith('*') ? bm.startsWith(am.slice(0, -1)) : am === bm
}

/** A provider base URL carries neither credentials (they would reach logs and the dashboard) nor a query. */
function checkBaseUrl(value: string, where: string): void {
  const u = new URL(value)
  if (u.username || u.password) {
    throw new ConfigError(`${where}: must not contain a user name or password; the API key travels in each call's own headers`)
  }
  if (u.search || value.includes('?')) throw new ConfigError(`${where}: must not contain a query ("?..."); only scheme, host, port and path are used`)
  if (u.hash || value.includes('#')) throw new ConfigError(`${where}: must not contain a fragment ("#...")`)
}

/** Why `url` is not a PostgreSQL connection URL Burnrate can use, or null. Never echoes the URL (it may hold a password). */
export function storageUrlProblem(url: string): string | null {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return 'expected a PostgreSQL URL, postgres://user:password@host:5432/database'
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return `expected a postgres:// (or postgresql://) URL, not ${u.protocol}//…; leave storage.url out to keep the ledger in the data folder's SQLite file`
  }
  if (!u.hostname && !u.searchParams.get('host')) return 'names no host (postgres://user:password@host:5432/database)'
  if (u.pathname.replace(/^\//, '') === '') return 'names no database (postgres://user:password@host:5432/database)'
  return null
}

/** `http(s)://host[:port]` with nothing after it. */
function isOrigin(value: string): boolean {
  const m = /^https?:\/\/([^/?#]+)\/?$/i.exec(value)
  return m !== null && splitHostPort(m[1]) !== null
}

/** A key pattern as budgets and tenant mappings take it (budgets/pattern.ts), or a ConfigError. */
function checkPattern(pattern: string, where: string): void {
  const problem = patternProblem(pattern)
  if (problem) throw new ConfigError(`${where}: ${problem}`)
}

/**
 * Where the configuration comes from: the data folder named by `--data-dir` or BURNRATE_DATA_DIR
 * (else none), the folder used when none is named, and the config file: the one named by
 * `--config` or BURNRATE_CONFIG (`explicit`), else `config.yaml` in the data folder (which may not exist).
 */
function configSources(flags: ConfigFlags, env: NodeJS.ProcessEnv): { dirOverride?: string; base: string; file: string; explicit: boolean } {
  const dirOverride = flags.dataDir ?? (env.BURNRATE_DATA_DIR || undefined)
  const explicit = flags.config ?? (env.BURNRATE_CONFIG || undefined)
  const base = flags.defaultDataDir ?? defaultDataDir()
  return { dirOverride, base, file: explicit ? resolve(explicit) : join(resolve(dirOverride ?? base), CONFIG_FILE), explicit: explicit !== undefined }
}

/**
 * Builds the effective configuration. Precedence: command-line flags, then environment
 * (BURNRATE_CONFIG, BURNRATE_DATA_DIR, BURNRATE_HOST, BURNRATE_PORT, BURNRATE_DATABASE_URL), then the
 * file, then defaults.
 * Without --config or BURNRATE_CONFIG, `<data dir>/config.yaml` is read when it exists.
 */
/** The config file `loadConfig` reads, or would read once it exists (what to name in a hint to edit it). */
export function configPath(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): string {
  return configSources(flags, env).file
}

export function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const { dirOverride, base, file: named, explicit } = configSources(flags, env)
  let file: string | null = null
  if (explicit) {
    file = named
    if (!existsSync(file)) throw new ConfigError(`config ${file}: file not found`)
  } else if (existsSync(named)) {
    // Found, not named: in a folder shared with other users it may be theirs (their listener as a provider's base_url).
    const untrusted = untrustedReason(named)
    if (untrusted) throw new ConfigError(`config ${named}: not read, ${untrusted}; make it yours and not writable by others, or name a config with --config`)
    file = named
  }

  let text = ''
  if (file) {
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new ConfigError(`config ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`)
    }
  }
  const parsed = parseConfigText(text, file ?? '(defaults)')

  if (flags.host ?? env.BURNRATE_HOST) parsed.server.host = (flags.host ?? env.BURNRATE_HOST) as string
  if (flags.port !== undefined) parsed.server.port = parsePort(flags.port, '--port')
  else if (env.BURNRATE_PORT) parsed.server.port = parsePort(env.BURNRATE_PORT, 'BURNRATE_PORT')

  if (env.BURNRATE_DATABASE_URL) parsed.storage.url = env.BURNRATE_DATABASE_URL
  if (parsed.storage.url !== null) {
    const where = env.BURNRATE_DATABASE_URL ? 'BURNRATE_DATABASE_URL' : `config ${file ?? '(defaults)'}: storage.url`
    const problem = storageUrlProblem(parsed.storage.url)
    if (problem) throw new ConfigError(`${where}: ${problem}`)
  }

  // Relative paths in the file are taken from its own folder, as data_dir's. Whether the CA file is
  // there is asked only by what trusts it, the server at start-up (../server/ca-file.ts): a command
  // that makes no call out (connect, report --local, import) works without it.
  const caFileAsWritten = parsed.upstream.ca_file
  if (caFileAsWritten && file) parsed.upstream.ca_file = fromConfigFolder(caFileAsWritten, file)

  let dataDir = dirOverride ?? (parsed.data_dir && file ? fromConfigFolder(parsed.data_dir, file) : base)
  if (!isAbsolute(dataDir)) dataDir = resolve(dataDir)
  if (!dirOverride && parsed.data_dir && file) checkLedgerNotLeftBehind(parsed.data_dir, dataDir, file)

  if (parsed.admin.enabled && !parsed.admin.token) {
    throw new ConfigError(
      `config ${file ?? '(defaults)'}: admin.token: expected a non-empty token because admin.enabled is true`,
    )
  }

  const namedBy = flags.dataDir !== undefined ? '--data-dir' : dirOverride !== undefined ? 'BURNRATE_DATA_DIR' : parsed.data_dir && file ? `data_dir in ${file}` : undefined
  return {
    ...parsed,
    data_dir: dataDir,
    ...(namedBy ? { data_dir_named_by: namedBy } : {}),
    timezone: parsed.timezone ?? machineTimeZone(),
    timezone_from: parsed.timezone ? 'config' : 'machine',
    source: file,
    ...(caFileAsWritten ? { ca_file_as_written: caFileAsWritten } : {}),
  }
}

/**
 * Releases before this one took a relative `data_dir` (and `~/…`, as a folder named `~`) from the
 * working folder. A server started where such a release kept its ledger would now open an empty
 * one beside the config file: today's spend and every budget meter back at $0, with nothing said.
 * It refuses instead, naming both folders, until the ledger is moved (or `data_dir` made absolute).
 */
function checkLedgerNotLeftBehind(dir: string, dataDir: string, file: string): void {
  if (isAbsolute(dir)) return
  const before = resolve(dir)
  if (before === dataDir || !existsSync(join(before, DB_FILE)) || existsSync(join(dataDir, DB_FILE))) return
  throw new ConfigError(
    `config ${file}: data_dir: "${dir}" is ${dataDir} (a relative data_dir is taken from the config file's folder), which has no ledger, ` +
      `while ${before} (where earlier releases took it from the working folder) has one; move that folder to ${dataDir}, or set data_dir to the absolute path of the one to use`,
  )
}

/**
 * A path in a config file (`data_dir`, `upstream.ca_file`): `~/…` is in the home folder, a relative
 * path is taken from the file's own folder. Taken from the working folder, one config would name a
 * ledger (and budget meters) per folder a server or `report --local` is started in, and a CA file
 * found or not by where the server was started.
 */
function fromConfigFolder(path: string, file: string): string {
  if (path === '~' || path.startsWith('~/') || path.startsWith('~\\')) return join(homedir(), path.slice(1))
  return resolve(dirname(file), path)
}

/**
 * The data folder alone, when the config does not load (a typo): `--data-dir`, BURNRATE_DATA_DIR,
 * the file's `data_dir` if the YAML can be read at all, else the default. Undoing what Burnrate
 * did (`burnrate disconnect`) needs only this, and must not be refused for a mistake elsewhere in
 * the file, while agents stay pointed at a server that cannot start.
 */
export function dataDirAnyway(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): string {
  const { dirOverride, base, file, explicit } = configSources(flags, env)
  let dir = dirOverride
  if (dir === undefined) {
    try {
      if (explicit || !untrustedReason(file)) {
        const read = readYaml(readFileSync(file, 'utf8'))
        const raw = read.ok ? (read.value as { data_dir?: unknown } | null) : null
        if (typeof raw?.data_dir === 'string' && raw.data_dir) dir = fromConfigFolder(raw.data_dir, file)
      }
    } catch {
      // no file, or not YAML: the default
    }
  }
  return resolve(dir ?? base)
}

