import { closeSync, openSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { count, emptyUsage, type Usage } from '../../metering/usage'
import { PROVIDERS } from '../../providers/registry'
import { str, timeOf } from '../lines'
import type { LogSource, LoggedCall, Parsed } from '../types'
import { fsError, listFiles, vanished } from '../walk'
import { opencodeLogins } from './opencode-logins'
import { type Step, storedSteps } from './opencode-steps'

/**
 * opencode: `~/.local/share/opencode` (`$XDG_DATA_HOME/opencode`): assistant messages as
 * `storage/message/<session>/<message>.json`, or rows of the `message` table of `opencode.db`
 * in newer versions. A message has `providerID`, `modelID`, `time.created`, `path.cwd` and
 * `tokens` {input (without cache), output (without reasoning; with it before spring 2026, see
 * outputHoldsReasoning), reasoning, cache {read, write}}.
 */
export const opencode: LogSource = {
  agent: 'opencode',
  defaultRoots(env, home) {
    return [join(env.XDG_DATA_HOME || join(home, '.local', 'share'), 'opencode')]
  },
  // Only the databases and storage/message: the data folder also holds whole git snapshots.
  async list(root, unreadable) {
    const top = await readdir(root)
    const folder = join(root, 'storage', 'message')
    const messages = await listFiles(folder, unreadable).catch((err) => {
      if (!vanished(err)) unreadable(folder)
      return [] as string[]
    })
    return [...top.filter((n) => n.endsWith('.db')), ...messages.map((n) => join('storage', 'message', n))]
  },
  isLog: (path) => /(^|[\\/])opencode(-[^\\/]*)?\.db$/.test(path) || (path.endsWith('.json') && /[\\/]message[\\/]/.test(path)),
  // opencode keeps the database open in WAL mode: new messages sit in `opencode.db-wal` until a checkpoint, the .db unchanged.
  companions: (path) => (path.endsWith('.db') ? [`${path}-wal`] : []),
  // Its logins (auth.json) are read once per run, for every log under the root.
  async open(root) {
    const logins = await opencodeLogins(root)
    return (path) => readLog(path, logins)
  },
  async read(path, root) {
    return readLog(path, await opencodeLogins(root))
  },
}

/**
 * One log's calls. A file that cannot be read (no permission: EACCES) throws its error, which the
 * importer names as unreadable and reads again next time; only its content is counted as a bad
 * line (counted so, it was taken as read, and its calls lost for good once it could be read).
 */
async function readLog(path: string, logins: ReadonlySet<string>): Promise<Parsed> {
  if (path.endsWith('.db')) return readDatabase(path, logins)
  const text = await readFile(path, 'utf8')
  let msg: unknown
  try {
    msg = JSON.parse(text)
  } catch {
    return { calls: [], skipped: 1 }
  }
  const m = msg as any
  const call = opencodeCall(m, logins)
  if (!call) return { calls: [], skipped: untimed(m) ? 1 : 0 }
  return { calls: stepCalls(call, await storedSteps(path, str(m.id), call.ts)), skipped: 0 }
}

function readDatabase(path: string, logins: ReadonlySet<string>): Parsed {
  // SQLite says only 'unable to open database file' of a file the user may not read: the file's own error first.
  closeSync(openSync(path, 'r'))
  const out: Parsed = { calls: [], skipped: 0 }
  let db: Database.Database | null = null
  try {
    db = new Database(path, { readonly: true, fileMustExist: true })
    const rootOf = sessionRoots(db, path)
    for (const row of db.prepare('SELECT id, session_id, data FROM message').iterate() as Iterable<any>) {
      let msg: any
      try {
        msg = JSON.parse(row.data)
      } catch {
        out.skipped++
        continue
      }
      const m = { id: row.id, sessionID: row.session_id, ...msg }
      const call = opencodeCall(m, logins)
      if (call) out.calls.push({ ...call, session: rootOf(call.session) })
      else if (untimed(m)) out.skipped++
    }
  } catch (err) {
    // Busy or locked (another process holds it), not opened, or an I/O error partway: the file not
    // read, never its messages' content. Thrown as the file system's, the importer names it and
    // reads it again next time; counted as a bad line, it was taken as read, and the messages
    // after the error waited for the database to change again.
    const unreadable = fsError(err) ? err : sqliteUnreadable(path, err)
    if (unreadable) throw unreadable
    out.skipped++
  } finally {
    db?.close()
  }
  return out
}

/** SQLite's errors of a file that could not be read now (its code's kind), as the file system's error; null for its content's. */
function sqliteUnreadable(path: string, err: unknown): NodeJS.ErrnoException | null {
  const code = String((err as { code?: unknown } | null)?.code ?? '')
  const errno = /^SQLITE_(BUSY|LOCKED)/.test(code) ? 'EBUSY' : /^SQLITE_(CANTOPEN|PERM|AUTH)/.test(code) ? 'EACCES' : /^SQLITE_(IOERR|PROTOCOL|FULL|NOMEM)/.test(code) ? 'EIO' : ''
  if (!errno) return null
  return Object.assign(new Error(`${path}: ${(err as Error).message} (${code})`), { code: errno, path })
}

/**
 * The session a sub-agent's session (the task tool's, its `session` row naming the one that
 * started it, `parent_id`) is recorded under: its root, as the proxy records its calls (their
 * `x-parent-session-id`, ../../agents/opencode.ts). A database without the table: each its own.
 */
function sessionRoots(db: Database.Database, path: string): (id: string) => string {
  const parents = new Map<string, string>()
  try {
    for (const r of db.prepare('SELECT id, parent_id FROM session WHERE parent_id IS NOT NULL').iterate() as Iterable<any>) {
      if (typeof r.id === 'string' && typeof r.parent_id === 'string' && r.parent_id) parents.set(r.id, r.parent_id)
    }
  } catch (err) {
    // Busy or not read: the file is read again later, never its sub-agents' calls put under their own sessions.
    const unreadable = sqliteUnreadable(path, err)
    if (unreadable) throw unreadable
    // An older or partial database: no parents known.
  }
  return (id) => {
    let at = id
    // Never round a cycle (a damaged table): at most as many hops as there are parents.
    for (let hop = 0; hop <= parents.size; hop++) {
      const up = parents.get(at)
      if (up === undefined || up === id) break
      at = up
    }
    return at
  }
}

/** opencode's providers that are Burnrate's under another name (the others have Burnrate's names). */
const OPENCODE_PROVIDERS: Record<string, string> = { google: 'gemini', 'google-vertex': 'vertex', 'google-vertex-anthropic': 'vertex', 'amazon-bedrock': 'bedrock' }

/** A provider as Burnrate names and prices it, from opencode's provider id (`google` is `gemini`, `google-vertex` `vertex`…). */
function providerOf(id: string): { provider: string; pricingId: string } {
  const name = OPENCODE_PROVIDERS[id] ?? id
  const p = PROVIDERS.find((x) => x.name === name)
  if (p) return { provider: p.name, pricingId: p.pricingId }
  return { provider: id, pricingId: id }
}

/**
 * The providers opencode logs in to a plan for, and the provider the proxy records such a call
 * under: its built-in Codex plugin (a ChatGPT login, provider `openai`, sent to the ChatGPT
 * backend: `chatgpt`) and the Anthropic OAuth plugin (a Claude account). Both set every model's
 * price to 0 under that login, so a plan's message has `cost: 0` with tokens. A 0 alone is not
 * enough: with an API key, a model models.dev has no price for is logged at 0 too, and is money.
 */
const PLAN_LOGINS: Record<string, string> = { openai: 'chatgpt', anthropic: 'anthropic' }

/**
 * Whether a message's `output` already holds its `reasoning`: opencode before its AI SDK 6 update
 * (spring 2026) logged the SDK's output tokens as they were, reasoning included where the provider
 * counts it in its output (OpenAI's completion tokens), beside the same reasoning; today's takes the
 * reasoning out. Its `total` (the provider's own) tells which: input, cache and output alone make
 * it up only when the output holds the reasoning. No `total` (the oldest versions): reasoning apart.
 */
function outputHoldsReasoning(t: any): boolean {
  const reasoning = count(t.reasoning)
  const output = count(t.output)
  if (reasoning === 0 || output < reasoning || typeof t.total !== 'number') return false
  return t.total === count(t.input) + count(t.cache?.read) + count(t.cache?.write) + output
}

/**
 * The call an opencode message is, or null. `logins`: the providers opencode is logged in to with
 * an account (./opencode-logins.ts); a message of one of those priced at 0 is a plan's call.
 */
export function opencodeCall(m: any, logins: ReadonlySet<string>): LoggedCall | null {
  if (!m || typeof m !== 'object' || m.role !== 'assistant' || !m.tokens || typeof m.tokens !== 'object') return null
  const t = m.tokens
  const u = usageOf(t)
  const ts = timeOf(m.time?.created)
  const id = str(m.id)
  if (!id || u.input_tokens + u.output_tokens === 0 || !Number.isFinite(ts)) return null
  const plan = m.cost === 0 && logins.has(str(m.providerID)) ? PLAN_LOGINS[str(m.providerID)] : undefined
  return {
    key: `opencode:${id}`,
    // A fork's copy has a new id and session, and the original's model, time and tokens.
    alias: `opencode:${str(m.providerID)}/${str(m.modelID)}@${ts}:${[t.input, t.output, t.reasoning, t.cache?.read, t.cache?.write].map(count).join(',')}`,
    ts,
    ...providerOf(str(m.providerID)),
    ...(plan ? { provider: plan, billing: 'subscription' as const } : {}),
    model: str(m.modelID),
    session: str(m.sessionID),
    project: str(m.path?.cwd) || str(m.path?.root),
    usage: u,
    response_id: '',
    endpoint: '',
  }
}

/**
 * Whether a message that is not a call is one only for its time, which cannot be read: a bad
 * line, counted (dropped without a word, the summary said every message was read).
 */
function untimed(m: any): boolean {
  if (!m || typeof m !== 'object' || m.role !== 'assistant' || !m.tokens || typeof m.tokens !== 'object' || !str(m.id)) return false
  const u = usageOf(m.tokens)
  return u.input_tokens + u.output_tokens > 0 && !Number.isFinite(timeOf(m.time?.created))
}

/** A message's or a step's `tokens` as Burnrate counts them: cache and reasoning added back into input and output. */
function usageOf(t: any): Usage {
  const u = emptyUsage()
  u.cache_read_tokens = count(t.cache?.read)
  u.cache_write_tokens = count(t.cache?.write)
  u.input_tokens = count(t.input) + u.cache_read_tokens + u.cache_write_tokens
  u.reasoning_tokens = count(t.reasoning)
  u.output_tokens = outputHoldsReasoning(t) ? count(t.output) : count(t.output) + u.reasoning_tokens
  return u
}

/**
 * A message's calls: itself, or, written by an opencode that put several steps in one message
 * (./opencode-steps.ts), each step, at the time its part was written. The last step, whose tokens
 * the message holds, keeps the message's keys (a message imported before as that one call is
 * not imported again); an earlier one's are the message's and its place among them (a fork's
 * copy, the same steps under new ids, is the same calls).
 */
function stepCalls(call: LoggedCall, steps: readonly Step[]): LoggedCall[] {
  if (steps.length < 2) return [call]
  const last = steps.length - 1
  return steps.flatMap((s, i) => {
    const usage = usageOf(s.tokens)
    if (usage.input_tokens + usage.output_tokens === 0) return []
    const own = i === last ? {} : { key: `${call.key}#${i}`, alias: `${call.alias}#${i}` }
    return [{ ...call, ...own, ts: s.ts, usage }]
  })
}
