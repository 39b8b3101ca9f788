import { createTwoFilesPatch } from 'diff'
import type { ConnectPlan } from '../../shared/connect'
import { sha256 } from './doc'
import { tildify } from './paths'
import type { AgentConnector, ConnectContext } from './types'
import type { FileWork, Work } from './write'

/**
 * The plan a person sees for `files`' writes: a diff per file that changes, and an id of the
 * files as they are now, so that a confirmation of an older plan is refused (`checkPlan`).
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
        diff: createTwoFilesPatch(name, name, w.before ?? '', w.after ?? '', w.before === null ? '(new file)' : '', w.after === null ? '(removed)' : '', { context: 3 }),
        settings: w.settings,
      }
    }),
    notes,
  }
  return { plan, files: all }
}
