import { readdir, readFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { str } from '../lines'
import { fsError, vanished } from '../walk'

/**
 * The steps of an opencode message, from its `step-finish` parts.
 *
 * opencode before it gave each step its own message (2025: one `streamText` of up to 1000 steps
 * per turn) wrote one assistant message per turn: at each step's end (`finish-step`) it added the
 * step's cost to the message's (`cost += usage.cost`) but replaced its tokens (`tokens =
 * usage.tokens`), and wrote a `step-finish` part with that step's tokens and cost. The message's
 * tokens are its last step's: its other steps, each an API call, are in its parts only.
 * Today's opencode writes a message per step (one `step-finish` part, the message's tokens).
 */
export interface Step {
  /** The part's id (`prt_…`): ascending, its time in it. */
  id: string
  ts: number
  tokens: object
}

/**
 * A message's `step-finish` parts in opencode's file storage, in the order written: the message is
 * `storage/message/<session>/<message>.json`, its parts `storage/part/<message>/<part>.json`. None
 * when its folder is absent (the message is then read as it says), or a part is not whole (one
 * still being written is read at the next import, the message rewritten after it). A folder or part
 * there that cannot be read (no permission) throws its error: the importer names the message as
 * unreadable and reads it again next time (read as it says, its other steps were lost for good).
 */
export async function storedSteps(messagePath: string, messageId: string, created: number): Promise<Step[]> {
  const storage = dirname(dirname(dirname(messagePath)))
  const folder = join(storage, 'part', messageId || basename(messagePath, '.json'))
  const steps: Step[] = []
  try {
    for (const name of (await readdir(folder)).filter((n) => n.endsWith('.json')).sort()) {
      const text = await readFile(join(folder, name), 'utf8')
      // Only a step's end is parsed: a tool's part can hold a whole file.
      if (!text.includes('"step-finish"')) continue
      const p = JSON.parse(text)
      if (p?.type !== 'step-finish' || !p.tokens || typeof p.tokens !== 'object') continue
      const id = str(p.id) || basename(name, '.json')
      steps.push({ id, ts: idTime(id, created), tokens: p.tokens })
    }
  } catch (err) {
    if (fsError(err) && !vanished(err)) throw err
    return []
  }
  return steps.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** What an opencode id's 6 time bytes hold: the low 48 bits of ms × 4096 + a counter, so ms modulo 2^36 (about 795 days). */
const ID_PERIOD = 2 ** 36

/**
 * The time an ascending opencode id (`prt_<12 hex><random>`) was made, the one of its period
 * nearest `near` (the message's creation, minutes before its steps end); `near` when the id
 * holds none.
 */
export function idTime(id: string, near: number): number {
  const hex = /^[a-z]+_([0-9a-f]{12})/.exec(id)?.[1]
  if (!hex || !Number.isFinite(near)) return near
  const low = Math.floor(parseInt(hex, 16) / 0x1000)
  let t = near - (((near % ID_PERIOD) + ID_PERIOD) % ID_PERIOD) + low
  if (t - near > ID_PERIOD / 2) t -= ID_PERIOD
  else if (near - t > ID_PERIOD / 2) t += ID_PERIOD
  return t
}
