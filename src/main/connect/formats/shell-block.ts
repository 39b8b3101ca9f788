import { type ConfigDoc, type FileFormat, type KeyPath, eolOf } from './types'

export const BLOCK_BEGIN = '# >>> burnrate >>>'
export const BLOCK_END = '# <<< burnrate <<<'
const NOTE = '# Added by Burnrate ("burnrate disconnect sdk" or Disconnect in the app removes this block).'

export type ShellSyntax = 'posix' | 'fish'

function assignment(syntax: ShellSyntax, name: string, value: string): string {
  const q = `'${value.replace(/'/g, `'\\''`)}'`
  const v = /^[A-Za-z0-9_./:@%+,-]+$/.test(value) ? value : q
  return syntax === 'fish' ? `set -gx ${name} ${v}` : `export ${name}=${v}`
}

function parseAssignment(syntax: ShellSyntax, line: string): [string, string] | null {
  const m = syntax === 'fish' ? /^\s*set -gx ([A-Za-z_][A-Za-z0-9_]*) (.*)$/.exec(line) : /^\s*export ([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line)
  if (!m) return null
  const raw = m[2].trim()
  return [m[1], raw.startsWith("'") && raw.endsWith("'") ? raw.slice(1, -1).replace(/'\\''/g, "'") : raw]
}

/**
 * A shell profile (~/.zshrc, ~/.bashrc, ~/.profile, fish's conf.d): Burnrate owns one marked
 * block and edits nothing outside it. Its variables come after anything the profile set earlier,
 * so they win while the block is there, and removing the block brings the earlier values back.
 */
export function shellBlockFormat(syntax: ShellSyntax): FileFormat {
  return {
    kind: 'shell',
    open(original: string): ConfigDoc {
      const eol = eolOf(original)
      let head = original
      let block: [string, string][] = []
      let tail = ''
      const begin = original.indexOf(BLOCK_BEGIN)
      const end = begin < 0 ? -1 : original.indexOf(BLOCK_END, begin)
      if (begin >= 0 && end >= 0) {
        head = original.slice(0, begin)
        let after = end + BLOCK_END.length
        if (original.startsWith('\r\n', after)) after += 2
        else if (original.startsWith('\n', after)) after += 1
        tail = original.slice(after)
        for (const line of original.slice(begin, end).split(/\r?\n/)) {
          const kv = parseAssignment(syntax, line)
          if (kv) block.push(kv)
        }
      }
      const name = (path: KeyPath) => path[0]
      return {
        get: (path) => block.find(([k]) => k === name(path))?.[1],
        set(path, value) {
          const i = block.findIndex(([k]) => k === name(path))
          if (i >= 0) block[i] = [name(path), String(value)]
          else block.push([name(path), String(value)])
        },
        delete(path) {
          block = block.filter(([k]) => k !== name(path))
        },
        isEmptyObject: () => false,
        value() {
          return this.text()
        },
        text() {
          if (block.length === 0) {
            // The block and the blank line Burnrate put before it go (also when lines were added
            // after the block since: nvm's and conda's installers append to the profile); the
            // rest is as it was.
            if (head.endsWith(eol + eol)) return head.slice(0, -eol.length) + tail
            return head + tail
          }
          let prefix = head
          if (prefix !== '' && begin < 0) prefix += prefix.endsWith(eol) ? eol : eol + eol
          const lines = [BLOCK_BEGIN, NOTE, ...block.map(([k, v]) => assignment(syntax, k, v)), BLOCK_END]
          return prefix + lines.join(eol) + eol + tail
        },
      }
    },
  }
}
