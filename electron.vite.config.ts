import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { defineConfig } from 'electron-vite'
import { parseAst } from 'rollup/parseAst'
import type { Plugin } from 'vite'
import vue from '@vitejs/plugin-vue'

/**
 * An ES import of a Node built-in builds its namespace from every export, which runs the lazy
 * getters: `import http from 'node:http'` loads Node's internal undici (fetch, WebSocket, web
 * streams) for `http.WebSocket`, and `node:crypto` loads WebCrypto, ~20-70 ms of the headless
 * start-up for features the server never uses. These built-ins are taken with
 * `process.getBuiltinModule` instead, re-exporting their plain values by name (the getters stay
 * lazy on the default export; naming one in an import fails the build, not a run).
 */
const LAZY_GETTER_BUILTINS = new Set(['node:http', 'node:crypto'])
function builtinsWithoutEagerGetters(): Plugin {
  const SOURCE = 'burnrate-builtin:'
  const PREFIX = '\0burnrate-builtin:'
  const IMPORT = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(node:http|node:crypto)\2/g
  return {
    name: 'burnrate:builtins-without-eager-getters',
    enforce: 'pre',
    transform(code, id) {
      // Our own modules (dependencies outside the bundle load as they always have).
      if (id.includes('/node_modules/') || !/\.[cm]?[jt]s$/.test(id)) return null
      const out = code.replace(IMPORT, (_, head: string, q: string, name: string) => `${head}${q}${SOURCE}${name}${q}`)
      return out === code ? null : { code: out, map: null }
    },
    resolveId(id) {
      return id.startsWith(SOURCE) && LAZY_GETTER_BUILTINS.has(id.slice(SOURCE.length)) ? PREFIX + id.slice(SOURCE.length) : null
    },
    load(id) {
      if (!id.startsWith(PREFIX)) return null
      const name = id.slice(PREFIX.length)
      const mod = createRequire(import.meta.url)(name) as object
      const names = Object.entries(Object.getOwnPropertyDescriptors(mod))
        .filter(([k, d]) => 'value' in d && k !== 'default' && /^[A-Za-z_$][\w$]*$/.test(k))
        .map(([k]) => k)
      return [
        `import { createRequire } from 'node:module'`,
        `const m = typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule(${JSON.stringify(name)}) : createRequire(import.meta.url)(${JSON.stringify(name)})`,
        `export default m`,
        `export const { ${names.join(', ')} } = m`,
      ].join('\n')
    },
  }
}

/** An ESTree node as rollup's parser gives it (positions are UTF-16 offsets into the code). */
interface AstNode {
  type: string
  start: number
  end: number
  [k: string]: unknown
}

/**
 * Whether `node` is plain data that JSON holds exactly: arrays, objects with plain keys, strings,
 * finite numbers, booleans (`!0`/`!1` as minifiers write them), null, templates without
 * expressions. Anything else (a function, a regex, a computed key, a spread) is not moved.
 */
function isPlainData(node: AstNode): boolean {
  switch (node.type) {
    case 'ArrayExpression':
      return (node.elements as (AstNode | null)[]).every((e) => e !== null && isPlainData(e))
    case 'ObjectExpression':
      return (node.properties as AstNode[]).every(
        (p) =>
          p.type === 'Property' &&
          p.kind === 'init' &&
          !p.computed &&
          !p.method &&
          !p.shorthand &&
          ['Identifier', 'Literal'].includes((p.key as AstNode).type) &&
          (p.key as AstNode & { value?: unknown; name?: string }).value !== '__proto__' &&
          (p.key as AstNode & { name?: string }).name !== '__proto__' &&
          isPlainData(p.value as AstNode),
      )
    case 'Literal': {
      const v = (node as AstNode & { value: unknown }).value
      return node.regex === undefined && node.bigint === undefined && (v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))
    }
    case 'UnaryExpression':
      return (node.operator === '!' || node.operator === '-') && (node.argument as AstNode).type === 'Literal' && typeof (node.argument as { value: unknown }).value === 'number'
    case 'TemplateLiteral':
      return (node.expressions as AstNode[]).length === 0
    default:
      return false
  }
}

/** Literals at least this long (characters of source) are moved out of the code. */
const DATA_LITERAL_MIN = 64 * 1024

/**
 * Finds the module's top-level `const` declarations initialised with a large plain-data literal
 * (@pydantic/genai-prices' price table: 800 KB of object literal) and replaces each with
 * `JSON.parse` of the same data as JSON, read from a file next to the built code (`urlOf(i)` is
 * the expression of the URL of the i-th literal's file, whose content is `json`). V8 keeps a module's source text for as long as the
 * module lives (to compile its functions lazily), and an object literal's data a second time as
 * the literal's boilerplate; data read with `JSON.parse` leaves neither behind, only the objects
 * (measured: 6.7 MiB less resident for the price library). Each moved literal is evaluated here
 * and must come back from its JSON deep-equal (same keys in the same order, same values), or the
 * build fails.
 */
export function moveDataLiteralsToJson(code: string, urlOf: (i: number, json: string) => string): { code: string; json: string[] } | null {
  const program = parseAst(code) as unknown as { body: AstNode[] }
  const found: { start: number; end: number; json: string }[] = []
  for (const stmt of program.body) {
    if (stmt.type !== 'VariableDeclaration' || stmt.kind !== 'const') continue
    for (const d of stmt.declarations as AstNode[]) {
      const init = d.init as AstNode | null
      if (!init || init.end - init.start < DATA_LITERAL_MIN || !isPlainData(init)) continue
      const text = code.slice(init.start, init.end)
      const value = new Function(`return (${text})`)() as unknown
      const json = JSON.stringify(value)
      if (!isDeepStrictEqual(JSON.parse(json), value)) throw new Error(`a data literal at ${init.start} does not survive JSON`)
      found.push({ start: init.start, end: init.end, json })
    }
  }
  if (found.length === 0) return null
  let out = ''
  let at = 0
  found.forEach((f, i) => {
    out += `${code.slice(at, f.start)}JSON.parse(__burnrateReadFileSync(__burnrateFileURLToPath(${urlOf(i, f.json)}), 'utf8'))`
    at = f.end
  })
  out += code.slice(at)
  const head = `import { readFileSync as __burnrateReadFileSync } from 'node:fs'; import { fileURLToPath as __burnrateFileURLToPath } from 'node:url';`
  return { code: `${head}${out}`, json: found.map((f) => f.json) }
}

/**
 * The library's only use of `localeCompare` is ordering its own identifiers (the snake_case
 * keys of its usage units: to make a canonical key of a unit's dimensions, and as the
 * tie-break when it orders units by how specific they are). The first call builds an ICU
 * collator, reading ICU's collation data and code: about 2.5 MiB resident for the life of the
 * process. Those keys are ASCII and are ordered the same by code units, which a plain `<` compare
 * does without ICU; both orders are total, so each of the two uses gives the same result
 * (test/pricing/bundled-data.test.ts compares every model's price with the library's). Exactly
 * the two known calls are replaced, or the build fails (a new version is looked at again).
 */
export function withoutLocaleCompare(code: string): string {
  const CALL = /\b([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\.localeCompare\(([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\)/g
  const calls = code.match(CALL)?.length ?? 0
  if (calls !== 2 || code.split('localeCompare').length - 1 !== 2) {
    throw new Error(`@pydantic/genai-prices: expected its two localeCompare calls on identifiers, found ${calls}`)
  }
  const helper = 'const __burnrateCompare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);'
  return `${helper}${code.replace(CALL, (_, a: string, b: string) => `__burnrateCompare(${a}, ${b})`)}`
}

/** What the build does to @pydantic/genai-prices' module (`urlOf` as for moveDataLiteralsToJson). */
export function transformPriceLibrary(code: string, urlOf: (i: number, json: string) => string): { code: string; json: string[] } {
  const moved = moveDataLiteralsToJson(code, urlOf)
  if (!moved) throw new Error('@pydantic/genai-prices: its price table was not found as a data literal')
  return { code: withoutLocaleCompare(moved.code), json: moved.json }
}

/** The price library is bundled so its module can be transformed (above). */
const DATA_LIBRARY = /\/node_modules\/@pydantic\/genai-prices\/dist\/index\.js$/
function priceLibrary(): Plugin {
  return {
    name: 'burnrate:price-library',
    transform(code, id) {
      if (!DATA_LIBRARY.test(id)) return null
      const out = transformPriceLibrary(code, (_, json) => {
        const ref = this.emitFile({ type: 'asset', name: 'genai-prices-data.json', source: json })
        return `import.meta.ROLLUP_FILE_URL_${ref}`
      })
      return { code: out.code, map: null }
    },
  }
}

/**
 * V8 stores a script's source as one-byte (Latin-1) text unless a character needs two bytes,
 * and then the whole source at two bytes a character, for as long as the module lives. One
 * ellipsis in a message doubled the largest chunks' retained text. Every character outside
 * ASCII in the main process's chunks is written as its `\uXXXX` escape, which means the same
 * in strings, templates, regular expressions, identifiers and comments.
 */
function asciiChunks(): Plugin {
  return {
    name: 'burnrate:ascii-chunks',
    enforce: 'post',
    // After every plugin's renderChunk (a later one may render from the chunk's own code).
    generateBundle(_, bundle) {
      for (const chunk of Object.values(bundle)) {
        if (chunk.type !== 'chunk' || !/[\u0080-\uffff]/.test(chunk.code)) continue
        if (/\bString\.raw\b/.test(chunk.code)) this.error(`${chunk.fileName}: String.raw would see an escaped character differently`)
        chunk.code = chunk.code.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      }
    },
  }
}

export default defineConfig({
  main: {
    plugins: [builtinsWithoutEagerGetters(), priceLibrary(), asciiChunks()],
    build: {
      // zod and yaml are bundled in (pure ESM, ~170 small files): loading one chunk instead of
      // them takes ~70 ms off the headless start-up. The price library is bundled so that its
      // price table becomes a JSON file (priceLibrary). Other dependencies stay external.
      externalizeDeps: { exclude: ['zod', 'yaml', '@pydantic/genai-prices'] },
      rollupOptions: {
        input: {
          cli: resolve(__dirname, 'src/main/cli.ts'),
          index: resolve(__dirname, 'src/main/index.ts'),
          'ledger-worker': resolve(__dirname, 'src/main/ledger/write-worker.ts'),
          'estimate-worker': resolve(__dirname, 'src/main/metering/estimate-worker.ts'),
          'export-worker': resolve(__dirname, 'src/main/dashboard/export-worker.ts'),
        },
        output: {
          // out/main/cli.js is the package's `burnrate` bin.
          banner: (chunk) => (chunk.name === 'cli' ? '#!/usr/bin/env node' : ''),
          // The price library's own chunk (loaded after start-up: src/main/pricing/library.ts) is named for it, not for its `dist` folder.
          chunkFileNames: (chunk) => (chunk.facadeModuleId && DATA_LIBRARY.test(chunk.facadeModuleId) ? 'chunks/genai-prices-[hash].js' : 'chunks/[name]-[hash].js'),
        },
      },
    },
  },
  renderer: {
    root: resolve(__dirname, 'src/renderer'),
    plugins: [vue()],
    build: {
      minify: true,
      rollupOptions: { input: resolve(__dirname, 'src/renderer/index.html') },
    },
  },
})
