import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isPagePath } from '.'
import { findRendererDir } from './renderer-dir'

let root: string
beforeAll(() => {
  // A fake build tree: <root>/out/renderer/index.html and the places code runs from.
  root = mkdtempSync(join(tmpdir(), 'burnrate-layout-'))
  mkdirSync(join(root, 'out/renderer'), { recursive: true })
  mkdirSync(join(root, 'out/main/chunks'), { recursive: true })
  mkdirSync(join(root, 'src/main/ui'), { recursive: true })
  writeFileSync(join(root, 'out/renderer/index.html'), '<!doctype html>')
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('findRendererDir', () => {
  it('finds out/renderer from the bundle, its chunks and the sources', () => {
    const want = join(root, 'out/renderer')
    expect(findRendererDir({}, join(root, 'out/main'))).toBe(want)
    expect(findRendererDir({}, join(root, 'out/main/chunks'))).toBe(want)
    expect(findRendererDir({}, join(root, 'src/main/ui'))).toBe(want)
  })

  it('prefers BURNRATE_RENDERER_DIR, and is null when that has no index.html', () => {
    expect(findRendererDir({ BURNRATE_RENDERER_DIR: join(root, 'out/renderer') }, '/nowhere')).toBe(join(root, 'out/renderer'))
    expect(findRendererDir({ BURNRATE_RENDERER_DIR: join(root, 'src') }, join(root, 'out/main'))).toBeNull()
  })

  it('is null when nothing was built', () => {
    expect(findRendererDir({}, join(tmpdir(), 'no-such-burnrate-dir/a/b'))).toBeNull()
  })
})

describe('isPagePath', () => {
  it('is true for app pages and false for the API and files', () => {
    expect(isPagePath('/')).toBe(true)
    expect(isPagePath('/rules')).toBe(true)
    expect(isPagePath('/index.html')).toBe(true)
    expect(isPagePath('/api/dashboard/summary')).toBe(false)
    expect(isPagePath('/api')).toBe(false)
    expect(isPagePath('/API/admin/x')).toBe(false)
    expect(isPagePath('/assets/index-1.js')).toBe(false)
    expect(isPagePath('/favicon.ico')).toBe(false)
  })
})
