import { isDeepStrictEqual } from 'node:util'
import type { AgentConnection, ConnectPlan } from '../../shared/connect'
import { asText, dotted, openDoc, readDoc, sha256 } from './doc'
import { type ConfigDoc, isPlainObject } from './formats/types'
import { proxyNotes, settingsProxyNote, shellWinsNote } from './notes'
import { tildify } from './paths'
import { planWork } from './plan'
import { redactText } from './redact'
import { shownValue } from './redact-file'
import { CONNECTORS } from './registry'
import { holdsChange } from './holds-change'
import { exclusive } from './lock'
import { settlePending } from './recover'
import { restoreWork, undoKeys } from './restore'
import { type ConnectionRecord, type FileRecord, StateStore } from './state'
import { ConnectError } from './errors'
import { type FileWork, type Work, type Writer, writeWork } from './write'
import type { AgentConnector, ConnectContext } from './types'

export { ConnectError, type ConnectErrorCode } from './errors'
export { proxyNotes } from './notes'

export interface ConnectionsOptions extends ConnectContext {
  /** Burnrate's data folder: the connection records and the backups go there. */
  dataDir: string
  connectors?: readonly AgentConnector[]
  now?: () => Date
}

/**
 * Connects agents to Burnrate by editing their own config files, and disconnects them by putting
 * back precisely what was there: the whole file from the backup when nobody touched it since, else
 * only the keys Burnrate owns (a value changed by hand since is left alone, and said so). Every
 * write is planned first (a diff the person sees), checked (read-only and malformed files are
 * refused before anything is written), and atomic. Plain Node: the app, the CLI and the admin API
 * all use it.
 */
export class AgentConnections {
  private readonly ctx: ConnectContext
  private readonly connectors: readonly AgentConnector[]
  private readonly state: StateStore
  private readonly now: () => Date
  /** Where the writes of a connect or disconnect go (./write.ts). */
  private readonly writer: Writer
  private readonly dataDir: string

  constructor(opts: ConnectionsOptions) {
    this.dataDir = opts.dataDir
    this.ctx = { home: opts.home, env: opts.env, platform: opts.platform }
    this.connectors = opts.connectors ?? CONNECTORS
    this.state = new StateStore(opts.dataDir)
    this.now = opts.now ?? (() => new Date())
    this.writer = { ctx: this.ctx, state: this.state, now: this.now }
  }

  connector(id: string): AgentConnector {
    const c = this.connectors.find((x) => x.id === id)
    if (!c) throw new ConnectError('unknown_agent', `Unknown agent "${id}"; one of: ${this.connectors.map((x) => x.id).join(', ')}.`)
    return c
  }

  /** Every agent, installed or not, with its current settings and whether Burnrate connected it. */
  list(): Omit<AgentConnection, 'last_call_at' | 'last_import_at'>[] {
    this.settleQuietly()
    const records = this.state.read()
    return this.connectors.map((c) => {
      const record = records[c.id] ?? null
      const settings: AgentConnection['settings'] = []
      const warnings: string[] = []
      let error: string | null = null
      let changed = false
      for (const f of c.files(this.ctx, record?.url ?? 'http://127.0.0.1:8787', record?.files.map((r) => r.path))) {
        let doc: ConfigDoc | null = null
        try {
          doc = openDoc(this.ctx, f, readDoc(this.ctx, f.path) ?? '')
        } catch (err) {
          error ??= (err as Error).message
        }
        const fileRecord = record?.files.find((r) => r.path === f.path)
        for (const s of f.settings) {
          const value = doc ? doc.get(s.key) : undefined
          settings.push({ file: tildify(this.ctx, f.path), key: dotted(s.key), value: shownValue(value, s.key) })
          const owned = fileRecord?.keys.find((k) => dotted(k.key) === dotted(s.key))
          if (doc && owned && !isDeepStrictEqual(value, owned.wrote)) changed = true
          // The agent now reads a file Burnrate did not edit (a ~/.gemini/.env made beside the
          // ~/.env it wrote, an opencode.jsonc, another login shell): what it holds is not
          // Burnrate's, and where it does not point at Burnrate, the agent's calls go around it.
          if (doc && record && !fileRecord && !isDeepStrictEqual(value, s.value)) changed = true
        }
        // Connected, yet its calls go around Burnrate (Codex on a model provider of its own).
        const bypass = doc && record ? c.bypassNote?.(this.ctx, f, doc, record.url) : null
        if (bypass) warnings.push(redactText(bypass))
      }
      return {
        agent: c.id,
        name: c.name,
        installed: c.installed(this.ctx),
        unsupported: c.unsupported?.(this.ctx) ?? null,
        connected: record !== null,
        url: record?.url ?? null,
        changed_since: changed,
        settings,
        error,
        note: c.note,
        warnings,
      }
    })
  }

  /** The agents Burnrate connected, and to which address. */
  connected(): { agent: string; url: string }[] {
    this.settleQuietly()
    return Object.values(this.state.read()).map((r) => ({ agent: r.agent, url: r.url }))
  }

  /** What connecting `agent` to the Burnrate at `url` would write. Writes nothing. */
  planConnect(agent: string, url: string): ConnectPlan {
    this.settle()
    return this.workConnect(this.connector(agent), normaliseUrl(url)).plan
  }

  /** What disconnecting `agent` would write. Writes nothing. */
  planDisconnect(agent: string): ConnectPlan {
    this.settle()
    return this.workDisconnect(this.connector(agent)).plan
  }

  /**
   * Points `agent` at the Burnrate at `url`. With `planId`, refuses (conflict) when the files
   * changed since that plan was shown, so what is written is what the person saw.
   */
  connect(agent: string, url: string, opts: { planId?: string } = {}): ConnectPlan {
    const c = this.connector(agent)
    const u = normaliseUrl(url)
    return exclusive(this.dataDir, (crashed) => this.connectNow(c, u, opts, crashed), { create: true })
  }

  private connectNow(c: AgentConnector, u: string, opts: { planId?: string }, crashed: number | null): ConnectPlan {
    this.settleNow(crashed)
    const work = this.workConnect(c, u)
    this.checkPlan(work, opts.planId)
    const records = this.state.read()
    const previous = records[c.id] ?? null
    if (work.plan.noop && previous?.url === u) return work.plan
    const files = work.files.flatMap((w) => (w.record ? [w.record] : []))
    // A file the agent no longer reads was put back (workConnect), as Disconnect does: its backups,
    // which the new record no longer names, go as Disconnect's do.
    const gone = (previous?.files ?? []).filter((f) => !files.some((r) => r.path === f.path))
    writeWork(
      this.writer,
      c,
      work,
      records,
      (next) => {
        next[c.id] = { agent: c.id, url: u, connected_at: previous?.connected_at ?? this.now().toISOString(), files }
      },
      backupsOf(gone),
    )
    return work.plan
  }

  /** Restores what `agent` had before Burnrate connected it. */
  disconnect(agent: string, opts: { planId?: string } = {}): ConnectPlan {
    const c = this.connector(agent)
    return exclusive(this.dataDir, (crashed) => this.disconnectNow(c, opts, crashed))
  }

  private disconnectNow(c: AgentConnector, opts: { planId?: string }, crashed: number | null): ConnectPlan {
    this.settleNow(crashed)
    const work = this.workDisconnect(c)
    this.checkPlan(work, opts.planId)
    const records = this.state.read()
    const record = records[c.id]
    if (!record) return work.plan
    writeWork(
      this.writer,
      c,
      work,
      records,
      (next) => {
        delete next[c.id]
      },
      backupsOf(record.files),
    )
    return work.plan
  }

  /** Disconnects every connected agent; one that cannot be restored does not stop the others. */
  disconnectAll(): { agent: string; plan?: ConnectPlan; error?: ConnectError }[] {
    return this.connected().map(({ agent }) => {
      try {
        return { agent, plan: this.disconnect(agent) }
      } catch (err) {
        if (err instanceof ConnectError) return { agent, error: err }
        throw err
      }
    })
  }

  private workConnect(c: AgentConnector, url: string): Work {
    const why = c.unsupported?.(this.ctx)
    if (why) throw new ConnectError('unsupported', `${c.name} cannot be connected here: ${why}`)
    const record = this.state.read()[c.id] ?? null
    const notes: string[] = []
    const files = c.files(this.ctx, url, record?.files.map((r) => r.path)).map((f): FileWork => {
      const before = readDoc(this.ctx, f.path)
      const doc = openDoc(this.ctx, f, before ?? '')
      const old = record?.files.find((r) => r.path === f.path) ?? null
      const rec: FileRecord = old
        ? { ...old, keys: old.keys.map((k) => ({ ...k })) }
        : { path: f.path, existed: before !== null, backup: null, written_sha256: '', written_copy: null, keys: [] }
      // Edited by hand since Burnrate wrote it: what is written now holds those edits, so the old
      // backup is no longer the file without Burnrate, and restoring it on Disconnect would drop
      // them. The new backup is what Disconnect would have put back just now.
      let rebased: string | undefined
      if (old && before !== null && sha256(before) !== old.written_sha256) {
        rebased = undoKeys(this.writer, f, old, before, old.backup ? this.state.readBackup(old.backup) : null).text
      }
      const settings: FileWork['settings'] = []
      for (const s of f.settings) {
        // An object the key goes in that is something else (`"env": null`) cannot be edited.
        for (let i = 1; i < s.key.length; i++) {
          const parent = doc.get(s.key.slice(0, i))
          if (parent !== undefined && !isPlainObject(parent)) {
            const where = dotted(s.key.slice(0, i))
            throw new ConnectError('malformed', `${tildify(this.ctx, f.path)} has ${where} = ${shownValue(parent, s.key.slice(0, i))}, where ${dotted(s.key)} must go in an object; fix it first (Burnrate wrote nothing).`, f.path)
          }
        }
        const current = doc.get(s.key)
        let owned = rec.keys.find((k) => dotted(k.key) === dotted(s.key))
        if (!owned) {
          const created: string[][] = []
          for (let i = 1; i < s.key.length; i++) if (doc.get(s.key.slice(0, i)) === undefined) created.push([...s.key.slice(0, i)])
          owned = { key: [...s.key], had: current !== undefined, previous: current, wrote: s.value, created }
          rec.keys.push(owned)
        } else if (!isDeepStrictEqual(current, owned.wrote) && !isDeepStrictEqual(current, s.value)) {
          // Set by hand since Burnrate set it (the user's own gateway): a re-point must not take
          // it over, nor Disconnect delete it later, so it stays recorded with what Burnrate wrote.
          notes.push(`${tildify(this.ctx, f.path)}: ${dotted(s.key)} was changed since Burnrate set it (now ${asText(current) ?? 'unset'}); left as it is (Disconnect, then connect again, to point it at Burnrate).`)
          continue
        }
        owned.wrote = s.value
        if (isDeepStrictEqual(current, s.value)) continue
        doc.set(s.key, s.value)
        settings.push({ key: dotted(s.key), from: asText(current), to: s.value })
      }
      const note = settingsProxyNote(this.ctx, c, f, doc, url)
      if (note) notes.push(note)
      const shadowed = shellWinsNote(this.ctx, c, f, url)
      if (shadowed) notes.push(shadowed)
      const bypass = c.bypassNote?.(this.ctx, f, doc, url)
      if (bypass) notes.push(bypass)
      const after = doc.text()
      rec.written_sha256 = sha256(after)
      return { file: f, before, after: before === null && settings.length === 0 ? null : after, record: rec, settings, rebased }
    })
    // A file Burnrate edited that the agent no longer reads its settings from (opencode's
    // opencode.jsonc made beside the opencode.json, another login shell's profile): put back as it
    // was, as Disconnect would, rather than left pointing at Burnrate and forgotten.
    if (record) {
      for (const rec of record.files) {
        if (files.some((w) => w.file.path === rec.path)) continue
        const w = restoreWork(this.writer, c, record.url, rec, notes)
        if (w) files.push(w)
      }
    }
    return planWork(this.ctx, c, 'connect', url, files, [...notes, ...proxyNotes(c.name, url, this.ctx)])
  }

  private workDisconnect(c: AgentConnector): Work {
    const record = this.state.read()[c.id] ?? null
    const notes: string[] = []
    if (!record) {
      notes.push(`${c.name} was not connected by Burnrate; nothing to restore.`)
      return planWork(this.ctx, c, 'disconnect', null, [], notes)
    }
    const files: FileWork[] = []
    for (const rec of record.files) {
      const w = restoreWork(this.writer, c, record.url, rec, notes)
      if (w) files.push(w)
    }
    return planWork(this.ctx, c, 'disconnect', record.url, files, notes)
  }

  /** settlePending for a read: one that cannot be settled now leaves the records as they are (a connect or disconnect says why). */
  private settleQuietly(): void {
    try {
      if (this.state.pending()) this.settle()
    } catch {
      // Read as the records are.
    }
  }

  /** settleNow, as the only Burnrate changing the agents' files (./lock.ts). */
  private settle(): void {
    exclusive(this.dataDir, (crashed) => this.settleNow(crashed))
  }

  /**
   * settlePending, a file changed by hand since judged by its keys (./holds-change.ts); then, after
   * a Burnrate that crashed holding the lock (`crashed`: when it took it), what it left unnamed.
   */
  private settleNow(crashed: number | null): void {
    settlePending(this.state, (pending, f, now) => holdsChange(this.ctx, this.connectors, this.state, pending, f, now))
    if (crashed !== null) this.state.dropUnnamed(crashed)
  }

  private checkPlan(work: Work, planId: string | undefined): void {
    if (planId !== undefined && planId !== work.plan.id) {
      throw new ConnectError('conflict', 'The files changed since this plan was made; look at the new plan and confirm again (Burnrate wrote nothing).')
    }
  }
}

/** The backups and written copies `files`' records name. */
function backupsOf(files: readonly FileRecord[]): string[] {
  return files.flatMap((f) => [f.backup, f.written_copy].filter((n): n is string => !!n))
}

/** `http://127.0.0.1:8787/` -> `http://127.0.0.1:8787`; only http(s) origins. */
export function normaliseUrl(url: string): string {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new ConnectError('unsupported', `"${url}" is not a URL such as http://127.0.0.1:8787.`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConnectError('unsupported', `"${url}" is not an http(s) address.`)
  if (u.port === '0') throw new ConnectError('unsupported', `"${url}" names port 0, which nothing can be reached at; give the port Burnrate listens on.`)
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`
}

export type { ConnectionRecord }
