import { chownSync, existsSync, lchownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../../test/support/http'
import { openInBrowser, sweepLoginPages } from './browser-login'

let dirs: string[] = []
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs = []
})

describe('opening the dashboard in the system browser', () => {
  for (const [at, secret] of [
    ['/login#', 'login=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde'],
    ['/login#', 'token=dash-token-0123456789abcdef'],
    ['/?', 'token=dash-token-0123456789abcdef'],
  ]) {
    it(`never puts ${at}${secret.split('=')[0]}= on the command line: the browser gets a private page that sends it on, removed later`, async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'burnrate-browser-login-')), 'userData')
      dirs.push(dir)
      const opened: string[] = []
      const url = `http://127.0.0.1:8787${at}${secret}`
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

describe('login pages left behind (the app quit before it removed them)', () => {
  it("are swept: only the app's own regular files of that name, never a link nor what it points to", () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-browser-login-sweep-'))
    dirs.push(dir)
    const page = (name: string) => join(dir, name)
    // Two pages a quit within the minute left (one made by openInBrowser itself).
    const made = openInBrowser('http://127.0.0.1:8787/login#login=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde', { dir, open: () => {}, removeAfterMs: 3_600_000 })!
    writeFileSync(page('dashboard-login-AAAAAAAAAAAA.html'), '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:8787/?token=x">', { mode: 0o600 })
    // Not the app's: another name, a folder and a link under the pattern (the link's target is the user's).
    writeFileSync(page('window-state.json'), '{}')
    writeFileSync(page('dashboard-login-notes.html.bak'), 'x')
    mkdirSync(page('dashboard-login-BBBBBBBBBBBB.html'))
    const elsewhere = join(mkdtempSync(join(tmpdir(), 'burnrate-browser-login-target-')), 'keep.html')
    dirs.push(join(elsewhere, '..'))
    writeFileSync(elsewhere, 'mine')
    symlinkSync(elsewhere, page('dashboard-login-CCCCCCCCCCCC.html'))
    const asRoot = process.getuid?.() === 0
    if (asRoot) {
      // Another user's file under the name (only root can make one here).
      writeFileSync(page('dashboard-login-DDDDDDDDDDDD.html'), 'theirs')
      chownSync(page('dashboard-login-DDDDDDDDDDDD.html'), 65534, 65534)
      lchownSync(page('dashboard-login-CCCCCCCCCCCC.html'), 65534, 65534)
    }

    expect(sweepLoginPages(dir).sort()).toEqual([made, page('dashboard-login-AAAAAAAAAAAA.html')].sort())
    expect(readdirSync(dir).sort()).toEqual(
      ['dashboard-login-BBBBBBBBBBBB.html', 'dashboard-login-CCCCCCCCCCCC.html', ...(asRoot ? ['dashboard-login-DDDDDDDDDDDD.html'] : []), 'dashboard-login-notes.html.bak', 'window-state.json'].sort(),
    )
    expect(readFileSync(elsewhere, 'utf8')).toBe('mine')
  })

  it('a folder that is not there yet has none', () => {
    expect(sweepLoginPages(join(tmpdir(), 'burnrate-no-such-folder-0123456789'))).toEqual([])
  })
})
