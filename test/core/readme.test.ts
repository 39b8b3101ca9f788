import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseConfigText } from '../../src/main/config/load'
import { configSchema } from '../../src/main/config/schema'

const README = readFileSync(join(__dirname, '../../README.md'), 'utf8')

/** The README's config reference: the YAML block after "Every key, with its default:". */
function referenceBlock(): string {
  const at = README.indexOf('Every key, with its default:')
  expect(at).toBeGreaterThan(-1)
  const start = README.indexOf('```yaml\n', at) + '```yaml\n'.length
  return README.slice(start, README.indexOf('```', start))
}

/** Every key path of an object schema, e.g. `server.host`, `upstream.idle_timeout_ms`. */
function keyPaths(shape: Record<string, any>, prefix = ''): string[] {
  const out: string[] = []
  for (const [k, v] of Object.entries(shape)) {
    const path = prefix + k
    out.push(path)
    let t: any = v
    while (t?.def?.innerType || t?.def?.in) t = t.def.innerType ?? t.def.in
    if (t?.def?.type === 'object' && path !== 'providers') out.push(...keyPaths(t.def.shape, `${path}.`))
  }
  return out
}

describe('the README', () => {
  it('has a config reference that loads as a real config file', () => {
    const cfg = parseConfigText(referenceBlock(), 'README.md')
    expect(cfg.budgets.rules.length).toBeGreaterThan(0)
    expect(cfg.pricing.overrides.length).toBeGreaterThan(0)
  })

  it('has only config examples that load (every ```yaml block that is a config file)', () => {
    const blocks = [...README.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1])
    const configs = blocks.filter((b) => /^(budgets|server|providers|pricing|team|storage|ledger|alerts|runaway|metrics|otel|timezone|tenants|dashboard|admin|upstream|import):/m.test(b))
    expect(configs.length).toBeGreaterThan(5)
    // A block with placeholders (`<sha256 hex of bob's token>`) shows a shape, not a file to copy.
    const uncommented = (b: string) => b.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '')).join('\n')
    const whole = configs.filter((b) => !/:\s*<[^>]+>/.test(uncommented(b)))
    expect(whole.length).toBeGreaterThanOrEqual(3)
    for (const b of whole) expect(() => parseConfigText(b, 'README.md'), b).not.toThrow()
  })

  it('names every config key in its reference', () => {
    expect(keyPaths(configSchema.def.shape)).toContain('upstream.idle_timeout_ms')
    expect(keyPaths(configSchema.def.shape)).toContain('server.allowed_origins')
    const block = referenceBlock()
    for (const path of keyPaths(configSchema.def.shape)) {
      const leaf = path.split('.').pop()!
      expect(block, `README config reference lacks ${path}`).toMatch(new RegExp(`^\\s*#?\\s*${leaf}:`, 'm'))
    }
  })

  it('gives the two commands to run it and the one to test it', () => {
    expect(README).toContain('npm install\nnpm start')
    expect(README).toContain('npm test')
  })
})
