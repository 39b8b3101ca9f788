import { createHash } from 'node:crypto'
import { ConnectError } from './errors'
import { readText, readTextOrBytes } from './files'
import { type ConfigDoc, type KeyPath, MalformedError } from './formats/types'
import { tildify } from './paths'
import type { AgentFile, ConnectContext } from './types'

/** Reading an agent's config file and naming what is in it, as a plan says it. */

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

/** `['env', 'ANTHROPIC_BASE_URL']` -> `env.ANTHROPIC_BASE_URL`. */
export const dotted = (k: KeyPath): string => k.join('.')

/** A setting's value as a plan shows it (null: unset). */
export const asText = (v: unknown): string | null => (v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v))

/** `text` parsed in `f`'s format; a file that does not parse is refused before anything is written. */
export function openDoc(ctx: ConnectContext, f: AgentFile, text: string): ConfigDoc {
  try {
    return f.format.open(text)
  } catch (err) {
    if (err instanceof MalformedError) {
      throw new ConnectError('malformed', `${tildify(ctx, f.path)} is ${err.message}; fix it first (Burnrate wrote nothing).`, f.path)
    }
    throw err
  }
}

/** The file's text (null: it does not exist); one that cannot be read is refused before anything is written. */
export function readDoc(ctx: ConnectContext, path: string): string | null {
  try {
    return readText(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTUTF8') throw notUtf8(ctx, path)
    throw unreadable(ctx, path, err)
  }
}

/** readDoc for putting a file back: one that is not UTF-8 is read byte for byte (./files.ts readTextOrBytes), not refused. */
export function readDocOrBytes(ctx: ConnectContext, path: string): { text: string; latin1: boolean } | null {
  try {
    return readTextOrBytes(path)
  } catch (err) {
    throw unreadable(ctx, path, err)
  }
}

/** A file that cannot be read: refused before anything is written. */
function unreadable(ctx: ConnectContext, path: string, err: unknown): ConnectError {
  const e = err as NodeJS.ErrnoException
  return new ConnectError('unreadable', `Cannot read ${tildify(ctx, path)} (${e.code ?? e.message}); Burnrate wrote nothing.`, path)
}

/** A file that is not UTF-8 text: refused, as one that does not parse is. */
export function notUtf8(ctx: ConnectContext, path: string): ConnectError {
  return new ConnectError('malformed', `${tildify(ctx, path)} is not UTF-8 text, which Burnrate edits; save it as UTF-8 first (Burnrate wrote nothing).`, path)
}
