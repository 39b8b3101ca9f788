import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'

/**
 * The runtime boundary the lint enforces (eslint.config.js): the server core never loads
 * electron, however it is imported; only src/main/desktop does. A static import alone was
 * caught before: `await import('electron')` and `require('electron')` passed.
 * Nor does it import src/main/desktop, whose modules import electron (passed before too).
 */

const eslint = new ESLint({ cwd: ROOT })

async function problems(file: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: join(ROOT, file) })
  return r.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message)
}

describe('only src/main/desktop imports electron', () => {
  it('refuses it outside, statically, dynamically and through require', async () => {
    for (const code of [
      "import { app } from 'electron'\nexport const a = app\n",
      "export const e = () => import('electron')\n",
      "export const e = () => import('electron/main')\n",
      "// eslint-disable-next-line @typescript-eslint/no-require-imports\nexport const e = require('electron')\n",
      // ESM's way to load a CommonJS module such as electron, and module.require: passed before.
      "import { createRequire } from 'node:module'\nexport const e = createRequire(import.meta.url)('electron')\n",
      "export const e = module.require('electron/main')\n",
    ]) {
      expect(await problems('src/main/desktop-logic/probe.ts', code), code).toHaveLength(1)
    }
  }, 60_000)

  it('refuses src/main/desktop outside it too: its modules import electron, so they would bring it into the server', async () => {
    for (const [file, code] of [
      ['src/main/server/probe.ts', "import { appIcon } from '../desktop/resources'\nexport const a = appIcon\n"],
      ['src/main/budgets/feed/probe.ts', "export { showNotice } from '../../desktop/notifications'\n"],
      ['src/main/probe.ts', "export const e = () => import('./desktop/app')\n"],
      ['src/main/desktop-logic/probe.ts', "// eslint-disable-next-line @typescript-eslint/no-require-imports\nexport const e = require('../desktop/tray')\n"],
    ]) {
      expect(await problems(file, code), code).toHaveLength(1)
    }
    // The Electron entry starts the desktop app; plain modules named like it stay allowed.
    expect(await problems('src/main/index.ts', "export { runDesktop } from './desktop/app'\n")).toEqual([])
    expect(await problems('src/main/server/probe.ts', "export { formatUsd } from '../desktop-logic/money'\n")).toEqual([])
  }, 60_000)

  it('lets src/main/desktop import it, and other packages whose names start the same', async () => {
    expect(await problems('src/main/desktop/probe.ts', "export const e = () => import('electron')\n")).toEqual([])
    expect(await problems('src/main/desktop-logic/probe.ts', "export const u = () => import('electron-updater')\n")).toEqual([])
  }, 60_000)
})
