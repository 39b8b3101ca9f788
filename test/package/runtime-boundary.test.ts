import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'

/**
 * The runtime boundary the lint enforces (eslint.config.js): the server core never loads
 * electron, however it is imported; only src/main/desktop does. A static import alone was
 * caught before: `await import('electron')` and `require('electron')` passed.
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
    ]) {
      expect(await problems('src/main/desktop-logic/probe.ts', code), code).toHaveLength(1)
    }
  }, 60_000)

  it('lets src/main/desktop import it, and other packages whose names start the same', async () => {
    expect(await problems('src/main/desktop/probe.ts', "export const e = () => import('electron')\n")).toEqual([])
    expect(await problems('src/main/desktop-logic/probe.ts', "export const u = () => import('electron-updater')\n")).toEqual([])
  }, 60_000)
})
