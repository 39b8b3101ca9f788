import { isDeepStrictEqual } from 'node:util'
import { applyPatch, structuredPatch } from 'diff'
import { asText, dotted, openDoc, readDocOrBytes, sha256 } from './doc'
import { endingLine, eolOf } from './formats/types'
import { tildify } from './paths'
import type { FileRecord, StateStore } from './state'
import type { AgentConnector, AgentFile, ConnectContext } from './types'
import type { FileWork } from './write'

/** What putting an agent's file back needs: its home (for names) and Burnrate's backups. */
export interface RestoreFrom {
  ctx: ConnectContext
  state: StateStore
}

/** One recorded file put back as it was before Burnrate (null: nothing to change there). */
export function restoreWork(from: RestoreFrom, c: AgentConnector, url: string, rec: FileRecord, notes: string[]): FileWork | null {
  const { ctx, state } = from
  // A file the agent no longer reads is opened in its own format, not the current file's: a
  // ~/.zshrc read as fish has none of Burnrate's lines, so the whole block, hand-set values
  // and all, would go, and every key be said to be "changed since".
  const f = c.files(ctx, url).find((x) => x.path === rec.path) ?? { path: rec.path, format: c.formatOf?.(rec.path) ?? c.files(ctx, url)[0].format, settings: [] }
  const shown = tildify(ctx, rec.path)
  // A file that became other than UTF-8 since (a line saved in Latin-1) is still put back, byte
  // for byte: refused, the agent would stay pointed at this Burnrate, gone once it quits.
  const read = readDocOrBytes(ctx, rec.path)
  if (read === null) {
    notes.push(`${shown} no longer exists; nothing to restore there.`)
    return null
  }
  const { text: before, latin1 } = read
  // Such a file's text is its bytes, not the backup's characters: only Burnrate's own keys are undone in it.
  const backup = rec.backup && !latin1 ? state.readBackup(rec.backup) : null
  const settings: FileWork['settings'] = []
  let after: string | null
  if (sha256(before) === rec.written_sha256 && (backup !== null || !rec.existed)) {
    // Untouched since Burnrate wrote it: put back the file exactly as it was.
    after = rec.existed ? backup : null
    const doc = openDoc(ctx, f, before)
    for (const k of rec.keys) settings.push({ key: dotted(k.key), from: asText(doc.get(k.key)), to: k.had ? asText(k.previous) : null })
  } else {
    const undone = undoKeys(from, f, rec, before, backup)
    after = undone.text
    settings.push(...undone.settings)
    notes.push(...undone.notes)
  }
  if (after === before) return null
  return { file: f, before, after, record: null, settings, folders: rec.created_dirs, ...(latin1 ? { encoding: 'latin1' as const } : {}) }
}

/**
 * `before` (changed since Burnrate wrote it) without Burnrate's keys: each key undone where it
 * still holds what Burnrate wrote, or better, the user's edits replayed onto the backup when
 * that means the same.
 */
export function undoKeys(
  from: RestoreFrom,
  f: AgentFile,
  rec: FileRecord,
  before: string,
  backup: string | null,
): { text: string; settings: FileWork['settings']; notes: string[] } {
  const { ctx, state } = from
  const shown = tildify(ctx, rec.path)
  const settings: FileWork['settings'] = []
  const notes: string[] = []
  // Undo only Burnrate's own keys, where they still hold what it wrote. Last
  // written first: a key written after another in an object the first one created (two keys
  // in `env`) is gone before that object is checked for being empty.
  const doc = openDoc(ctx, f, before)
  const undone: { setting?: FileWork['settings'][number]; note?: string }[] = []
  for (const k of [...rec.keys].reverse()) {
    const current = doc.get(k.key)
    if (!isDeepStrictEqual(current, k.wrote)) {
      undone.push({ note: `${shown}: ${dotted(k.key)} was changed since Burnrate set it (now ${asText(current) ?? 'unset'}); left as it is.` })
      continue
    }
    if (k.had) doc.set(k.key, k.previous)
    else doc.delete(k.key)
    for (const parent of [...k.created].reverse()) if (doc.isEmptyObject(parent)) doc.delete(parent)
    undone.push({ setting: { key: dotted(k.key), from: asText(current), to: k.had ? asText(k.previous) : null } })
  }
  // Told in the order the keys were written.
  for (const u of undone.reverse()) {
    if (u.note) notes.push(u.note)
    if (u.setting) settings.push(u.setting)
  }
  let text = doc.text()
  // Better still: the user's edits (the diff from what Burnrate wrote to what is there now)
  // replayed onto the backup keep even the layout Burnrate's edit changed, when they apply
  // cleanly and mean exactly what the key-by-key undo means. Else Burnrate's own edit (the diff
  // from the backup to what it wrote) taken out of the file as it is now: a line the user added
  // right under Burnrate's has no place in the backup to go, and the key-by-key undo may
  // re-indent the lines next to it.
  const written = rec.written_copy ? state.readBackup(rec.written_copy) : null
  const means = (merged: string | false): merged is string => {
    if (merged === false) return false
    try {
      return isDeepStrictEqual(openDoc(ctx, f, merged).value(), doc.value())
    } catch {
      return false
    }
  }
  if (backup !== null && written !== null) {
    // Less context fails less often where Burnrate's own lines sit next to the user's edit, but
    // without context a hunk goes by line numbers alone: both ways are tried with more context
    // first (the table Codex appends when it trusts a folder came back a line early, its last
    // line's ending dropped: the same meaning, other bytes).
    const tries = [3, 1, 0].flatMap((context) => [
      () => applyPatch(backup, structuredPatch('', '', written, before, '', '', { context })),
      () => applyPatch(before, structuredPatch('', '', written, backup, '', '', { context })),
    ])
    for (const merge of tries) {
      const merged = merge()
      if (!means(merged)) continue
      text = merged
      break
    }
  }
  // The file as it is now ends its last line (the user's, added since): so does what is put back.
  // The backup's missing newline, replayed onto it, would join the next line added onto that one.
  if (before.endsWith('\n')) text = endingLine(text, eolOf(before))
  return { text, settings, notes }
}
