import { describe, expect, it } from 'vitest'
import { STARTUP_BUILTINS, holdAgain, holdOptimizingCompiler, tieringSetByUser } from './startup-tiering'

describe('holding TurboFan during start-up', () => {
  it('turns it off at once and back on once, however often the resume is called', () => {
    const set: string[] = []
    const resume = holdOptimizingCompiler((f) => set.push(f), [])
    expect(set).toEqual(['--no-turbofan'])
    resume()
    resume()
    expect(set).toEqual(['--no-turbofan', '--turbofan'])
  })

  it('holds it again after start-up until the last of overlapping holds resumes', () => {
    const set: string[] = []
    holdOptimizingCompiler((f) => set.push(f), [])()
    set.length = 0
    const express = holdAgain()
    const undici = holdAgain()
    expect(set).toEqual(['--no-turbofan'])
    undici()
    undici()
    expect(set).toEqual(['--no-turbofan'])
    express()
    expect(set).toEqual(['--no-turbofan', '--turbofan'])
  })

  it('leaves the compiler alone when V8 refuses the flag', () => {
    const resume = holdOptimizingCompiler(() => {
      throw new Error('flags are frozen')
    }, [])
    expect(() => resume()).not.toThrow()
  })

  it('loads the built-in modules before it changes the flag', () => {
    const loaded = (n: string) => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes(`NativeModule ${n}`)
    // A built-in this test process has not loaded yet, so the probe can see it load.
    const name = ['trace_events', 'domain', 'sqlite'].find((n) => !loaded(n))!
    expect(name).toBeDefined()
    const seen: boolean[] = []
    holdOptimizingCompiler(() => seen.push(loaded(name)), [`node:${name}`])
    expect(seen).toEqual([true])
    for (const b of STARTUP_BUILTINS) expect(process.getBuiltinModule(b), b).toBeTruthy()
  })

  it("sees the user's own choice of V8's tiers, in node's arguments or NODE_OPTIONS, and nothing else", () => {
    for (const flag of ['--no-turbofan', '--turbofan', '--no-opt', '--jitless', '--max-opt=2', '--no-maglev']) {
      expect(tieringSetByUser([flag], ''), flag).toBe(true)
      expect(tieringSetByUser([], `--max-old-space-size=512 ${flag}`), flag).toBe(true)
    }
    for (const flag of ['--trace-opt', '--optimize-for-size', '--enable-source-maps', '--import=tsx']) {
      expect(tieringSetByUser([flag], flag), flag).toBe(false)
    }
    expect(tieringSetByUser([], '')).toBe(false)
  })
})
