import { createTwoFilesPatch } from 'diff'
import type { ConnectPlan } from '../../shared/connect'
import { sha256 } from './doc'
import { tildify } from './paths'
import { redactText } from './redact'
import { redactFile } from './redact-file'
import type { AgentConnector, ConnectContext } from './types'
import type { FileWork, Work } from './write'

/**
 * The plan a person sees for `files`' writes: a diff per file that changes, and an id of the
 * files as they are now, so that a confirmation of an older plan is refused (`checkPlan`). What
 * it shows (the diffs' lines, the settings' values, the notes) has the files' secrets hinted
 * (./redact.ts): it is printed by the CLI and answered to the admin token.
 */
export function planWork(ctx: ConnectContext, c: AgentConnector, action: ConnectPlan['action'], url: string | null, all: FileWork[], notes: string[]): Work {
  const changing = all.filter((w) => w.after !== w.before)
  const id = sha256(JSON.stringify([c.id, action, url, all.map((w) => [w.file.path, w.before === null ? null : sha256(w.before)])]))
  const plan: ConnectPlan = {
    id,
    agent: c.id,
    action,
    url,
    noop: changing.length === 0,
    changes: changing.map((w) => {
      const name = tildify(ctx, w.file.path)
      return {
        file: name,
        create: w.before === null,
        remove: w.after === null,
        diff: createTwoFilesPatch(name, name, shownFile(w, w.before), shownFile(w, w.after), w.before === null ? '(new file)' : '', w.after === null ? '(removed)' : '', {
          context: 3,
        }),
        settings: w.settings.map((st) => ({ key: st.key, from: shown(st.from), to: shown(st.to) })),
      }
    }),
    notes: notes.map(redactText),
  }
  return { plan, files: all }
}

const shown = (v: string | null): string | null => (v === null ? null : redactText(v))

/**
 * One side of a file's diff as shown: hinted by the file's structure (./redact-file.ts), before the
 * diff is made, so a secret whose text falls on a line of its own (a TOML multi-line string, a JSON
 * value on the line after its key) is judged by the key it sits under, not by that line alone.
 */
const shownFile = (w: FileWork, text: string | null): string => (text === null ? '' : redactFile(text, w.file.format.kind))
