import { z } from 'zod'
import { INGEST_MAX_CALLS } from '../../shared/api'
import { isValidTimeZone } from '../time/zone'

/**
 * The YAML configuration. Every object is strict: an unknown key is an error that names it,
 * so a typo such as `daily_limit` never silently does nothing.
 */

// The config is parsed once or twice per process: zod's compiled fast path for objects (code it
// generates and compiles on an object schema's first parse) costs more at start-up than it saves.
z.config({ jitless: true })

const usd = z.number().finite().nonnegative()

/**
 * The largest price taken, in USD per million tokens (config and admin API): far above any real
 * price, and low enough that a call's cost stays a finite number (1e308 made any call's cost Infinity,
 * recorded unpriced).
 */
export const MAX_PRICE_MTOK = 1_000_000_000
const priceMtok = usd.max(MAX_PRICE_MTOK, { message: `expected a price from 0 to ${MAX_PRICE_MTOK} US dollars per million tokens` })

/** Node's timers cannot wait longer than 2^31-1 ms (about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647
const timerMs = (def: number) =>
  z
    .number()
    .int()
    .positive()
    .max(MAX_TIMER_MS, { message: `expected at most ${MAX_TIMER_MS} (about 24 days, the longest a timer can wait)` })
    .default(def)

const scopePattern = z.string().min(1).nullable().optional()

/** Types only: the rules between fields are checked by src/main/budgets/check.ts, as for the admin API. */
export const budgetRuleSchema = z
  .object({
    api_key_pattern: z.string().min(1),
    daily_limit_usd: usd.nullable().optional(),
    weekly_limit_usd: usd.nullable().optional(),
    monthly_limit_usd: usd.nullable().optional(),
    window_hours: z.number().positive().nullable().optional(),
    window_limit_usd: usd.nullable().optional(),
    session_limit_usd: usd.nullable().optional(),
    model_pattern: scopePattern,
    provider: scopePattern,
    agent: scopePattern,
    tenant: scopePattern,
    requests_per_minute: z.number().int().positive().nullable().optional(),
    tokens_per_minute: z.number().int().positive().nullable().optional(),
    alert_at_pct: z.array(z.number().gt(0).max(1)).min(1).nullable().optional(),
    reserve: z.enum(['expected', 'max_tokens']).optional(),
    action: z.enum(['block', 'warn']),
    soft_limit_pct: z.number().min(0).max(1).nullable().optional(),
  })
  .strict()

export const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const

/** JS weekday (0 = Sunday) of `budgets.week_start`. */
export function weekStartDay(name: (typeof WEEKDAYS)[number]): number {
  return (WEEKDAYS.indexOf(name) + 1) % 7
}

const providerSchema = z
  .object({
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    /** DeepSeek, Moonshot, Z.ai: the base URL of their Anthropic-compatible API (`…/<name>/anthropic`). */
    anthropic_base_url: z.url({ protocol: /^https?$/ }).optional(),
    enabled: z.boolean().optional(),
    /** Azure: deployment name -> model name, for pricing. */
    deployments: z.record(z.string(), z.string()).optional(),
    /** Bedrock: application inference profile (its ARN or id) -> model id, for pricing. */
    profiles: z.record(z.string(), z.string()).optional(),
  })
  .strict()

const priceOverrideSchema = z
  .object({
    /** A model name, or a prefix ending in `*`. */
    model: z.string().min(1),
    /** Restrict the override to one provider (e.g. `openai`); all providers when absent. */
    provider: z.string().optional(),
    input_mtok: priceMtok,
    output_mtok: priceMtok,
    cache_read_mtok: priceMtok.optional(),
    cache_write_mtok: priceMtok.optional(),
    cache_write_1h_mtok: priceMtok.optional(),
    /**
     * `fast`: the price of the model's fast tier (Anthropic's fast mode, OpenAI's Fast mode),
     * for calls its answer says that tier served, and only for them; `standard` (the default):
     * the usual price.
     */
    speed: z.enum(['standard', 'fast']).optional(),
  })
  .strict()

export const configSchema = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8787),
        /** More names this server answers to in `Host` (`name` for any port, `name:port`); see src/main/security. */
        allowed_hosts: z.array(z.string().min(1)).default([]),
        /** Web pages (`http://localhost:5173`) allowed to call the server from a browser. */
        allowed_origins: z.array(z.string().min(1)).default([]),
        /** The address browsers open Burnrate at through a reverse proxy (`https://burnrate.team.example`): its page may log in to the dashboard whatever `Host` the proxy passes. */
        public_url: z.string().min(1).optional(),
        /** Total MB of proxied request bodies and clients' WebSocket messages held in memory at once; past it calls get 503 service_unavailable, sockets are closed 1013. */
        max_buffered_body_mb: z.number().int().min(1).max(65_536).default(500),
        /** Open client connections at most; idle and half-sent ones make room for new ones, else 503. */
        max_connections: z.number().int().min(10).max(1_000_000).default(2000),
      })
      .strict()
      .prefault({}),
    data_dir: z.string().min(1).optional(),
    timezone: z
      .string()
      .refine(isValidTimeZone, { message: 'expected an IANA time zone name such as "UTC" or "Europe/Berlin"' })
      .optional(),
    providers: z.record(z.string(), providerSchema).default({}),
    pricing: z
      .object({
        overrides: z.array(priceOverrideSchema).default([]),
        /** Fetch newer price data (@pydantic/genai-prices' published data) in the background, daily. */
        auto_update: z.boolean().default(true),
        /** Where the price data is fetched from (a mirror, or a local server in tests). */
        update_url: z.url({ protocol: /^https?$/ }).optional(),
        /**
         * Gemini's Grounding with Google Search, free within a project allowance Burnrate cannot
         * see: `free` records its queries at $0, `paid` prices them at Google's list (pricing/search-grounding.ts).
         */
        google_search_grounding: z.enum(['free', 'paid']).default('free'),
      })
      .strict()
      .prefault({}),
    tenants: z
      .object({
        key_mappings: z
          .array(z.object({ pattern: z.string().min(1), tenant: z.string().min(1) }).strict())
          .default([]),
      })
      .strict()
      .prefault({}),
    budgets: z
      .object({
        /** The day weekly limits start on (at local midnight in `timezone`). */
        week_start: z.enum(WEEKDAYS).default('monday'),
        rules: z.array(budgetRuleSchema).default([]),
      })
      .strict()
      .prefault({}),
    runaway: z
      .object({
        /** The same model and conversation tail from one session `repeats` times in `window_minutes`. */
        loop: z
          .object({
            action: z.enum(['off', 'warn', 'block']).default('warn'),
            repeats: z.number().int().min(2).default(5),
            window_minutes: z.number().positive().default(10),
          })
          .strict()
          .prefault({}),
        /** A session spending more than this per minute. */
        spend_rate: z
          .object({ usd_per_minute: usd.nullable().default(null), action: z.enum(['off', 'warn', 'block']).default('warn') })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    alerts: z
      .object({
        /** Where budget threshold alerts are POSTed. */
        webhooks: z
          .array(z.object({ url: z.url({ protocol: /^https?$/ }), format: z.enum(['json', 'slack']).default('json') }).strict())
          .default([]),
        /** Attempts after the first when a webhook fails (timeout, network error, status other than 2xx). */
        retries: z.number().int().min(0).max(20).default(5),
        /** Wait before the first retry; doubled for each next one. */
        backoff_ms: timerMs(1000),
        /** Time allowed for one attempt. */
        timeout_ms: timerMs(10_000),
      })
      .strict()
      .prefault({}),
    admin: z
      .object({ enabled: z.boolean().default(false), token: z.string().optional() })
      .strict()
      .prefault({}),
    dashboard: z
      .object({
        enabled: z.boolean().default(true),
        token: z.string().optional(),
        /**
         * Longest time an export's client may take none of its bytes while staying connected (a
         * stalled tab, a script paused in a debugger); past it the export is ended (the client sees
         * a cut-off download) and what it held (PostgreSQL: its transaction and connection) is freed.
         */
        export_stall_ms: timerMs(60_000),
      })
      .strict()
      .prefault({}),
    upstream: z
      .object({
        /** Time allowed to open a connection to the provider. */
        connect_timeout_ms: timerMs(10_000),
        /** Time allowed between sending the request and the first response byte. */
        first_byte_timeout_ms: timerMs(600_000),
        /** Longest silence allowed inside a response (a stalled stream). */
        idle_timeout_ms: timerMs(300_000),
        /** Proxy for every upstream call (http://user:password@host:port); unset: HTTPS_PROXY / HTTP_PROXY. */
        proxy: z.url({ protocol: /^(https?|socks5?|socks5h)$/ }).optional(),
        /** Hosts reached without the proxy (`api.example.com`, `.internal`, `host:port`, `*`), besides NO_PROXY. */
        no_proxy: z.array(z.string().min(1)).default([]),
        /** A PEM file of certificate authorities to trust besides the usual ones (a corporate TLS proxy, a private CA). */
        ca_file: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    import: z
      .object({
        /** Import new entries of the agents' own logs as they appear (default: on in the desktop app, off headless). */
        watch: z.boolean().optional(),
      })
      .strict()
      .prefault({}),
    ledger: z
      .object({
        /** Longest time a recorded call waits in memory before its batch is written. */
        flush_interval_ms: z.number().int().min(1).max(100).default(50),
        /** Calls held in memory while the database cannot be written; past it the oldest are dropped (and counted). */
        max_pending: z.number().int().positive().default(100_000),
        /**
         * Days raw calls are kept; older ones are pruned in the background (the dashboard rollups
         * keep their totals). Null: kept forever. At least 32: budgets' monthly windows and the
         * dashboard's 30-day ranges read raw calls.
         */
        retention_days: z.number().int().min(32).max(36_500).nullable().default(null),
      })
      .strict()
      .prefault({}),
    /**
     * Where the shared ledger lives. Unset: the SQLite file in the data folder. `url:
     * postgres://user:password@host:5432/db` puts calls, rollups, rules, price overrides and budget
     * spend in PostgreSQL (a team server; several instances may share it). BURNRATE_DATABASE_URL wins.
     */
    storage: z
      .object({
        url: z.string().min(1).nullable().default(null),
        /**
         * Longest wait (ms) for PostgreSQL to admit a call under a `block` rule; past it this
         * instance decides the call on its own meters, as when the database is away.
         */
        budget_wait_ms: z.number().int().min(100).max(60_000).default(3000),
      })
      .strict()
      .prefault({}),
    /** Reporting to a team Burnrate (src/main/team): this one sends its calls there, or is the team server. */
    team: z
      .object({
        /** The team server's address (`https://burnrate.example.com`): this Burnrate sends its recorded calls there. */
        url: z.url({ protocol: /^https?$/ }).optional(),
        /** The token the team server gave this Burnrate (sent as `Authorization: Bearer`). */
        token: z.string().min(1).optional(),
        /** Calls per `POST /api/ingest`. */
        batch_size: z.number().int().min(1).max(INGEST_MAX_CALLS).default(500),
        /** Longest wait between retries while the team server is away or refuses (the waits double up to this, with jitter). */
        max_backoff_ms: z.number().int().min(100).max(MAX_TIMER_MS).default(300_000),
        /** On the team server: who may send calls to `POST /api/ingest`, one entry per reporting Burnrate. */
        members: z
          .array(
            z
              .object({
                /** The member the calls are recorded under (the dashboard's `member`). */
                name: z.string().min(1).max(200),
                /** The member's bearer token, or `token_sha256`: its lowercase hex SHA-256 (so the raw token need not be in this file). */
                token: z.string().min(1).optional(),
                token_sha256: z.string().regex(/^[0-9a-f]{64}$/, { message: 'expected 64 lowercase hex digits (sha256sum of the token)' }).optional(),
              })
              .strict(),
          )
          .default([]),
      })
      .strict()
      .prefault({}),
    /** Prometheus exposition at `GET /metrics` (src/main/metrics). */
    metrics: z
      .object({ enabled: z.boolean().default(false) })
      .strict()
      .prefault({}),
    /** OTLP/HTTP export of metrics and one span per call (src/main/otel); off without an endpoint. */
    otel: z
      .object({
        /** Base URL of the collector (`http://collector:4318`); `/v1/traces` and `/v1/metrics` are appended. */
        endpoint: z.url({ protocol: /^https?$/ }).nullable().default(null),
        /** Sent with every export (e.g. an API key of the backend). */
        headers: z.record(z.string(), z.string()).default({}),
        /** How often metrics are exported. */
        interval_ms: timerMs(60_000).pipe(z.number().min(100)),
        /** Longest an export may take (retries included) before it counts as failed. */
        timeout_ms: timerMs(10_000).pipe(z.number().min(100)),
        /** Calls waiting to be exported as spans; past it new ones are dropped (and counted in /api/health). */
        max_queue: z.number().int().positive().default(2048),
        traces: z.boolean().default(true),
        metrics: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
  })
  .strict()

export type ConfigInput = z.input<typeof configSchema>
export type ParsedConfig = z.output<typeof configSchema>

/** The configuration after defaults, flags and environment are applied. */
export interface Config extends ParsedConfig {
  data_dir: string
  /**
   * What named `data_dir`: `--data-dir`, `BURNRATE_DATA_DIR` or `data_dir in <config file>`; absent
   * for the default folder. A folder named that does not exist is a typo to a reader (../cli/target.ts).
   */
  data_dir_named_by?: string
  timezone: string
  /** Where `timezone` came from: the config (file, environment or flag), or the machine's own zone when none named one. */
  timezone_from?: 'config' | 'machine'
  /** The file it was read from, or null for defaults only. */
  source: string | null
  /**
   * `upstream.ca_file` as the file wrote it (`certs/ca.pem`, `~/ca.pem`), before it was taken from
   * the file's folder: what start-up names when the file is not there (../server/ca-file.ts).
   */
  ca_file_as_written?: string
}
