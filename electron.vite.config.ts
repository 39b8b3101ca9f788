import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
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

export default defineConfig({
  main: {
    plugins: [builtinsWithoutEagerGetters()],
    build: {
      // zod and yaml are bundled in (pure ESM, ~170 small files): loading one chunk instead of
      // them takes ~70 ms off the headless start-up. Other dependencies stay external.
      externalizeDeps: { exclude: ['zod', 'yaml'] },
      rollupOptions: {
        input: {
          cli: resolve(__dirname, 'src/main/cli.ts'),
          index: resolve(__dirname, 'src/main/index.ts'),
          'ledger-worker': resolve(__dirname, 'src/main/ledger/write-worker.ts'),
          'estimate-worker': resolve(__dirname, 'src/main/metering/estimate-worker.ts'),
          'export-worker': resolve(__dirname, 'src/main/dashboard/export-worker.ts'),
        },
        // out/main/cli.js is the package's `burnrate` bin.
        output: { banner: (chunk) => (chunk.name === 'cli' ? '#!/usr/bin/env node' : '') },
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
