import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Where the built dashboard (electron-vite's `out/renderer`) is, or null when it was not built.
 * `BURNRATE_RENDERER_DIR` wins; otherwise the folder is found relative to the running code, which
 * is `out/main/*.js` or `out/main/chunks/*.js` once bundled (the same layout inside an Electron
 * asar), or `src/main/ui/*.ts` when run from sources (tests).
 */
export function findRendererDir(env: NodeJS.ProcessEnv = process.env, here = moduleDir()): string | null {
  if (env.BURNRATE_RENDERER_DIR) {
    const dir = resolve(env.BURNRATE_RENDERER_DIR)
    return hasIndex(dir) ? dir : null
  }
  const candidates = [join(here, '../renderer'), join(here, '../../renderer'), join(here, '../../../out/renderer')]
  return candidates.find(hasIndex) ?? null
}

function hasIndex(dir: string): boolean {
  return existsSync(join(dir, 'index.html'))
}

function moduleDir(): string {
  return dirname(fileURLToPath(import.meta.url))
}
