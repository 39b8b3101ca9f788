import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import vue from '@vitejs/plugin-vue'

// One build for both runtimes: out/main/cli.js is the headless server (plain Node),
// out/main/index.js the Electron main process; both bundle the same server core.
// The renderer is built to out/renderer and served by the server at `/`.
export default defineConfig({
  main: {
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
