import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { keyHint } from '../../shared/key-hint'
import { type Rule, RuleIndex } from './rules'

function rule(pattern: string, source: Rule['source'], daily = 1): Rule {
  return { ...DEFAULT_RULE_OPTIONS, api_key_pattern: pattern, daily_limit_usd: daily, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source, created_at: source === 'runtime' ? 1 : null }
}
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

describe('RuleIndex precedence', () => {
  const config = [rule('*', 'config'), rule('sk-*', 'config'), rule('sk-dev-*', 'config'), rule('sk-dev-exact-key-1', 'config')]

  it('within config: exact, then longest prefix, then shorter, then *', () => {
    const idx = new RuleIndex([], config)
    expect(idx.effective('sk-dev-exact-key-1')?.api_key_pattern).toBe('sk-dev-exact-key-1')
    expect(idx.effective('sk-dev-other')?.api_key_pattern).toBe('sk-dev-*')
    expect(idx.effective('sk-prod-1')?.api_key_pattern).toBe('sk-*')
    expect(idx.effective('pk-1')?.api_key_pattern).toBe('*')
  })

  it('any matching runtime rule beats every config rule', () => {
    const idx = new RuleIndex([rule('sk-*', 'runtime', 9)], config)
    const r = idx.effective('sk-dev-exact-key-1')
    expect(r).toMatchObject({ api_key_pattern: 'sk-*', source: 'runtime', daily_limit_usd: 9 })
    expect(idx.effective('pk-1')?.source).toBe('config')
  })

  it('no rule: null', () => {
    expect(new RuleIndex([], [rule('sk-*', 'config')]).effective('pk-1')).toBeNull()
    expect(new RuleIndex([], []).empty).toBe(true)
  })

  it('resolves by hash: exact rules by the key hash, * always, short prefixes from the hint, longer ones when seen', () => {
    const key = 'sk-dev-aaaaaaaaaaaa-1234'
    const idx = new RuleIndex([], [rule('sk-dev-*', 'config'), rule('sk-*', 'config')])
    expect(idx.effectiveByHash(sha(key), keyHint(key), new Set())?.api_key_pattern).toBe('sk-*')
    expect(idx.effectiveByHash(sha(key), keyHint(key), new Set(['sk-dev-*']))?.api_key_pattern).toBe('sk-dev-*')
    const exact = new RuleIndex([rule(key, 'runtime')], [])
    expect(exact.effectiveByHash(sha(key), keyHint(key), new Set())?.api_key_pattern).toBe(key)
    expect(new RuleIndex([], [rule('*', 'config')]).effectiveByHash(sha('x'), '…', new Set())?.api_key_pattern).toBe('*')
    // A short key's hint ("…") reveals nothing: a prefix rule cannot be resolved from it.
    expect(new RuleIndex([], [rule('sk-*', 'config')]).effectiveByHash(sha('sk-1'), '…', new Set())).toBeNull()
  })

  it('lists rules sorted by pattern, a runtime rule before the config rule it overrides', () => {
    const idx = new RuleIndex([rule('sk-*', 'runtime')], [rule('sk-*', 'config'), rule('a-*', 'config')])
    expect(idx.list().map((x) => [x.rule.api_key_pattern, x.rule.source, x.overridden])).toEqual([
      ['a-*', 'config', false],
      ['sk-*', 'runtime', false],
      ['sk-*', 'config', true],
    ])
  })

  it('each snapshot has a new generation', () => {
    expect(new RuleIndex([], []).generation).not.toBe(new RuleIndex([], []).generation)
  })
})
