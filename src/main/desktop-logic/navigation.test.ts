import { describe, expect, it } from 'vitest'
import { classifyNavigation } from './navigation'

const APP = 'http://127.0.0.1:8787'

describe('classifyNavigation', () => {
  it('keeps the dashboard in the window', () => {
    expect(classifyNavigation('http://127.0.0.1:8787/?range=7d', APP)).toBe('inside')
    expect(classifyNavigation('http://127.0.0.1:8787/api/dashboard/export?format=csv', APP)).toBe('inside')
  })
  it('sends other sites, other ports and other hosts for the same machine to the browser', () => {
    expect(classifyNavigation('https://docs.anthropic.com/', APP)).toBe('external')
    expect(classifyNavigation('http://127.0.0.1:9999/', APP)).toBe('external')
    expect(classifyNavigation('http://localhost:8787/', APP)).toBe('external')
    expect(classifyNavigation('mailto:team@example.com', APP)).toBe('external')
  })
  it('opens nothing for local files, scripts and custom schemes', () => {
    expect(classifyNavigation('file:///etc/passwd', APP)).toBe('blocked')
    expect(classifyNavigation('javascript:alert(1)', APP)).toBe('blocked')
    expect(classifyNavigation('vscode://open?x', APP)).toBe('blocked')
    expect(classifyNavigation('not a url', APP)).toBe('blocked')
  })
})
