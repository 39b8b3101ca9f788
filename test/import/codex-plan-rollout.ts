/**
 * Codex rollout lines for the tests of a session whose plan a later event names (an older Codex
 * writes no account in session_meta and no rate limits in its first token_count events):
 * codex-plan-later, codex-plan-later-server, and their PostgreSQL and team twins.
 */
const usage = (input: number, output: number) => ({ input_tokens: input, cached_input_tokens: 0, output_tokens: output, reasoning_output_tokens: 0, total_tokens: input + output })

/** The rate limits a ChatGPT plan's events carry: what names the session's plan. */
export const PLAN = { primary: { used_percent: 3, window_minutes: 300, resets_at: 1790000000 }, secondary: { used_percent: 1, window_minutes: 10080, resets_at: 1790500000 }, plan_type: 'plus' }

export const line = (x: object) => JSON.stringify(x) + '\n'

/** A token_count event at `at`: the session's totals and the last response's [input, output] tokens. */
export const tokenCount = (at: number, total: [number, number], last: [number, number], rateLimits: object | null) =>
  line({ timestamp: new Date(at).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
    total_token_usage: usage(...total), last_token_usage: usage(...last), model_context_window: 272000 }, rate_limits: rateLimits } })

/** A session's first lines: its session_meta (`meta` added to it) and a turn on gpt-5-codex. */
export const sessionHead = (at: number, id: string, cwd: string, meta: object = {}) =>
  line({ timestamp: new Date(at).toISOString(), type: 'session_meta', payload: { id, cwd, originator: 'codex_cli_rs', ...meta } }) +
  line({ timestamp: new Date(at).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-codex', cwd } })

/** An older Codex's session begun at `at`: two responses whose events carry no rate limits. */
export const twoResponses = (at: number, id = 'abc', cwd = '/home/dev/x') =>
  sessionHead(at, id, cwd) + tokenCount(at + 1000, [5000, 400], [5000, 400], null) + tokenCount(at + 9000, [11000, 900], [6000, 500], null)

/** The third response of `twoResponses(at)`, whose event names the plan. */
export const planNamed = (at: number) => tokenCount(at + 20_000, [18000, 1500], [7000, 600], PLAN)
