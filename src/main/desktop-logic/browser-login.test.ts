import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../../test/support/http'
import { openInBrowser } from './browser-login'

let dirs: string[] = []
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs = []
})

describe('opening the dashboard in the system browser', () => {
  for (const secret of ['login=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde', 'token=dash-token-0123456789abcdef']) {
    it(`never puts ?${secret.split('=')[0]}= on the command line: the browser gets a private page that sends it on, removed later`, async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'burnrate-browser-login-')), 'userData')
      dirs.push(dir)
      const opened: string[] = []
      const url = `http://127.0.0.1:8787/?${secret}`
      const file = openInBrowser(url, { dir, open: (u) => opened.push(u), removeAfterMs: 200 })
      expect(opened).toHaveLength(1)
      expect(opened[0]).not.toContain(secret.split('=')[1])
      expect(opened[0]).toMatch(/^file:\/\//)
      expect(fileURLToPath(opened[0])).toBe(file)
      expect(statSync(file!).mode & 0o777).toBe(0o600)
      expect(readFileSync(file!, 'utf8')).toContain(`url=${url}`)
      await eventually(() => !existsSync(file!))
    })
  }

  it('opens an address without a secret as it is', () => {
    const opened: string[] = []
    expect(openInBrowser('http://127.0.0.1:8787', { dir: '/nonexistent', open: (u) => opened.push(u) })).toBeNull()
    expect(opened).toEqual(['http://127.0.0.1:8787'])
  })
})
