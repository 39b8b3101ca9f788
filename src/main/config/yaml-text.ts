import { isAlias, isMap, isPair, isSeq, LineCounter, type Node, parseDocument } from 'yaml'

/**
 * Most values a config file may hold once its aliases and merge keys (`<<: *rule`) are expanded:
 * thousands of rules sharing an anchor, where a "billion laughs" file (aliases of aliases, each
 * level multiplying the one before) holds billions. Counted on the parsed document, before any
 * value is built.
 */
export const MAX_EXPANDED_VALUES = 100_000

/** A value that YAML reads as syntax when it starts with one of these: a token or password may. */
const YAML_SYNTAX_HINT = '; a value starting with *, &, !, |, >, %, @ or ` must be in quotes'

/**
 * The yaml library's reason, without the text of the file it quotes after a colon (`Block scalar
 * header includes extra characters: |<the token>`, `Unresolved alias …: <the token>`, `Unresolved
 * tag: !<the token>`): a config holds tokens and passwords, and this error is printed at start-up
 * (the desktop app writes it to its log file). The line and column, when known, say where.
 */
function yamlReason(message: string): string {
  const first = message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
  const colon = first.indexOf(': ')
  if (colon === -1) return first
  const reason = first.slice(0, colon)
  return /alias|tag|block scalar/i.test(reason) ? reason + YAML_SYNTAX_HINT : reason
}

/** A problem with aliases found before the document is turned into values, and where. */
class AliasProblem extends Error {
  constructor(
    message: string,
    readonly offset: number | undefined,
  ) {
    super(message)
  }
}

/**
 * Walks the document in order as the yaml library resolves aliases (an alias names the last anchor
 * set before it) and counts the values it holds with every alias expanded. Refuses an alias to no
 * anchor, one inside its own anchor (a value holding itself: a merge key so written recursed until
 * the library's count gave up) and more than MAX_EXPANDED_VALUES values.
 */
function checkAliases(contents: unknown): void {
  const anchors = new Map<string, Node>()
  const sizes = new Map<Node, number>()
  const size = (node: unknown): number => {
    if (isAlias(node)) {
      const target = anchors.get(node.source)
      if (!target) {
        throw new AliasProblem(
          `Unresolved alias (the anchor must be set before the alias)${YAML_SYNTAX_HINT}; an anchor (&name) shared by rules can be set on the first one, or under a top-level key starting with x-`,
          node.range?.[0],
        )
      }
      const s = sizes.get(target)
      if (s === undefined) throw new AliasProblem('an alias inside the value its anchor is set on (a value holding itself)', node.range?.[0])
      return s
    }
    if (node === null || typeof node !== 'object') return 1
    const n = node as Node
    if (n.anchor) anchors.set(n.anchor, n)
    let s = 1
    if (isMap(n) || isSeq(n)) {
      for (const item of n.items) s += isPair(item) ? size(item.key) + size(item.value) : size(item)
    }
    if (s > MAX_EXPANDED_VALUES) {
      throw new AliasProblem(`more than ${MAX_EXPANDED_VALUES} values once its aliases are expanded (a "billion laughs" file?)`, n.range?.[0])
    }
    sizes.set(n, s)
    return s
  }
  size(contents)
}

/**
 * The values of a config file's YAML, or why it cannot be read (`not valid YAML (line 3, column
 * 5): …`), never quoting the file's text. Keys must be unique; merge keys (`<<: *anchor`, YAML
 * 1.1's, which YAML 1.2 left out) are applied, keys written beside one winning over those it brings.
 */
export function readYaml(text: string): { ok: true; value: unknown } | { ok: false; problem: string } {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, merge: true, lineCounter })
  // A tag the library does not know (`token: !Xy9…`, a value that starts with "!") is only a
  // warning to it, and the value becomes '': a dashboard.token so written left the dashboard open.
  const e = doc.errors[0] ?? doc.warnings.find((w) => w.code === 'TAG_RESOLVE_FAILED')
  if (e) {
    const line = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : ''
    return { ok: false, problem: `not valid YAML${line}: ${yamlReason(e.message)}` }
  }
  try {
    checkAliases(doc.contents)
  } catch (err) {
    if (!(err instanceof AliasProblem)) throw err
    const at = err.offset === undefined ? undefined : lineCounter.linePos(err.offset)
    return { ok: false, problem: `not usable YAML${at ? ` (line ${at.line}, column ${at.col})` : ''}: ${err.message}` }
  }
  try {
    // The library's own bound on aliases as well (each anchor's uses times the aliases it holds),
    // high enough for thousands of rules merging one anchor: checkAliases bounds the total.
    return { ok: true, value: doc.toJS({ maxAliasCount: 10_000 }) }
  } catch (err) {
    return { ok: false, problem: `not usable YAML: ${yamlReason((err as Error).message)}` }
  }
}
