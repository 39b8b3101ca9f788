import { createRequire } from 'node:module'
import type { JSONParser } from '@streamparser/json'

/**
 * The parser is loaded with the first document that needs it (a batch's results past 1 MB or a
 * results line past 256 KB), not at start-up: its module costs about 13 ms and 4-5 MiB resident
 * there, for what most users never receive (as undici's ProxyAgent is, ../proxy/call/undici.ts).
 */
const require = createRequire(import.meta.url)
let parserClass: typeof JSONParser | undefined
const Parser = (): typeof JSONParser => (parserClass ??= (require('@streamparser/json') as { JSONParser: typeof JSONParser }).JSONParser)

/** Keys never created in a picked object: a hostile answer's `__proto__` under a `*` would reach Object.prototype. */
const UNSAFE = new Set(['__proto__', 'constructor', 'prototype'])

/**
 * Picks a few values out of a JSON document too large to hold (a batch's results: an embeddings
 * line of tens of megabytes, a Gemini batch answer with thousands of inline results) as its bytes
 * pass, with @streamparser/json: only the values at `paths` (`$.a.b`, `*` for any key or index)
 * are kept, everything else is let go as soon as it is read (`keepStack: false`), so memory is
 * that of the picked values whatever the document's size. The result has the document's shape cut
 * down to them, array positions kept (an element with nothing picked is a hole).
 *
 * The tokenizer is JavaScript (about 25 MB/s on this machine, against JSON.parse's 500): fed
 * chunk by chunk as they arrive, each costs a few milliseconds of the event loop.
 */
export class PathPicker {
  private readonly parser: JSONParser
  private readonly picked: Record<string, unknown> = Object.create(null)
  private ended = false
  private failed = false

  constructor(paths: readonly string[]) {
    this.parser = new (Parser())({ paths: [...paths], keepStack: false })
    this.parser.onValue = ({ value, key, stack }) => {
      if (key !== undefined) this.place(stack.slice(1).map((s) => s.key).concat(key), value)
    }
    // Bytes after the document (a line's `\r`) are not an error of the document.
    this.parser.onError = () => {
      if (!this.ended) this.failed = true
    }
    this.parser.onEnd = () => {
      this.ended = true
    }
  }

  write(chunk: Uint8Array): void {
    if (this.failed || this.ended || chunk.length === 0) return
    this.parser.write(chunk)
  }

  /** The picked values, or undefined when the bytes were not one whole JSON document. */
  end(): Record<string, unknown> | undefined {
    if (!this.ended && !this.failed) this.parser.end()
    return this.ended && !this.failed ? this.picked : undefined
  }

  private place(keys: (string | number | undefined)[], value: unknown): void {
    let at = this.picked as Record<string | number, unknown>
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]
      if (k === undefined || (typeof k === 'string' && UNSAFE.has(k))) return
      if (i === keys.length - 1) {
        at[k] = value
        return
      }
      at[k] ??= typeof keys[i + 1] === 'number' ? [] : Object.create(null)
      at = at[k] as Record<string | number, unknown>
    }
  }
}
