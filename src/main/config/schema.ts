import { z } from 'zod'
import { isValidTimeZone } from '../time/zone'

/**
 * The YAML configuration. Every object is strict: an unknown key is an error that names it,
 * so a typo such as `daily_limit` never silently does nothing.
 */

const usd = z.number().finite().nonnegative()

export const budgetRuleSchema = z
  .object({
    api_key_pattern: z.string().min(1),
    daily_limit_usd: usd.nullable().optional(),
    monthly_limit_usd: usd.nullable().optional(),
    action: z.enum(['block', 'warn']),
    soft_limit_pct: z.number().min(0).max(1).nullable().optional(),
  })
  .strict()

const providerSchema = z
  .object({
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    enabled: z.boolean().optional(),
    /** Azure: deployment name -> model name, for pricing. */
    deployments: z.record(z.string(), z.string()).optional(),
  })
  .strict()

const priceOverrideSchema = z
  .object({
    /** A model name, or a prefix ending in `*`. */
    model: z.string().min(1),
    /** Restrict the override to one provider (e.g. `openai`); all providers when absent. */
    provider: z.string().optional(),
    input_mtok: usd,
    output_mtok: usd,
    cache_read_mtok: usd.optional(),
    cache_write_mtok: usd.optional(),
    cache_write_1h_mtok: usd.optional(),
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
      .object({ overrides: z.array(priceOverrideSchema).default([]) })
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
      .object({ rules: z.array(budgetRuleSchema).default([]) })
      .strict()
      .prefault({}),
    admin: z
      .object({ enabled: z.boolean().default(false), token: z.string().optional() })
      .strict()
      .prefault({}),
    dashboard: z
      .object({ enabled: z.boolean().default(true), token: z.string().optional() })
      .strict()
      .prefault({}),
    upstream: z
      .object({
        /** Time allowed to open a connection to the provider. */
        connect_timeout_ms: z.number().int().positive().default(10_000),
        /** Time allowed between sending the request and the first response byte. */
        first_byte_timeout_ms: z.number().int().positive().default(600_000),
        /** Longest silence allowed inside a response (a stalled stream). */
        idle_timeout_ms: z.number().int().positive().default(300_000),
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
  timezone: string
  /** The file it was read from, or null for defaults only. */
  source: string | null
}
