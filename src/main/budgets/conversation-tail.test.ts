import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { tailOf } from './conversation-tail'

/**
 * The look for long strings in a tail (which decides how each part is written into the hash) goes
 * through each value of the tail a bounded number of times, whatever its shape: it runs on the main
 * thread after each call, every other agent's call waiting. Its work is counted in values gone
 * through, not timed.
 */

const capture = (name: string) => JSON.parse(readFileSync(join(__dirname, '../../../test/agents/captures', `${name}.json`), 'utf8')).body
const LONG = 'x'.repeat(4096)

/** Values (strings, numbers, arrays, objects, …) in the last two messages of a body: what a tail is made of. */
function values(body: { messages?: unknown[]; input?: unknown[]; contents?: unknown[] }): number {
  const count = (v: unknown): number => {
    if (typeof v !== 'object' || v === null) return 1
    return 1 + (Array.isArray(v) ? v : Object.values(v)).reduce((n: number, x) => n + count(x), 0)
  }
  const msgs = body.messages ?? body.input ?? body.contents ?? []
  return count(msgs.slice(-2))
}

function work(body: unknown): { hash: string | undefined; scanned: number } {
  const w = { scanned: 0 }
  const hash = tailOf(body, w)?.hash
  return { hash, scanned: w.scanned }
}

/** Arrays nested `depth` deep, each level [deeper, after], a long string at the bottom. */
function chain(depth: number, after: unknown): unknown {
  let v: unknown = LONG
  for (let i = 0; i < depth; i++) v = [v, after]
  return v
}

const user = (content: unknown) => ({ role: 'user', content })

/** Claude Code's request with a session's turns: parallel tool calls, a big file read, small results. */
function claudeCode() {
  const base = capture('claude-code-2.1')
  const file = Array.from({ length: 4000 }, (_, i) => `${i}\tconst x${i} = "a\\tb";\n`).join('')
  const use = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input })
  const result = (id: string, content: unknown) => ({ type: 'tool_result', tool_use_id: id, content })
  return {
    ...base,
    messages: [
      ...base.messages,
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'look at the parser', signature: 's'.repeat(400) }, { type: 'text', text: 'Reading the files.' }, use('toolu_01', 'Read', { file_path: '/home/dev/shop/parser.ts' }), use('toolu_02', 'Bash', { command: 'npm test' })] },
      user([result('toolu_01', file), result('toolu_02', [{ type: 'text', text: 'FAIL src/parser.test.ts\n  ✕ parses "a\\tb"' }]), { type: 'text', text: '<system-reminder>todo list is empty</system-reminder>', cache_control: { type: 'ephemeral' } }]),
    ],
  }
}

/** Codex's Responses request with a shell call and its output. */
function codex() {
  const base = capture('codex-cli')
  const output = JSON.stringify({ output: Array.from({ length: 300 }, (_, i) => `src/file${i}.ts`).join('\n'), metadata: { exit_code: 0 } })
  return {
    ...base,
    input: [
      ...base.input,
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'e'.repeat(6000) },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'shell', arguments: '{"command":["ls","-R","src"]}' },
      { type: 'function_call_output', call_id: 'call_1', output },
    ],
  }
}

/** An OpenAI chat request (opencode on an OpenAI-compatible provider) with a tool call and its result. */
function chat() {
  const base = capture('opencode-chat')
  return {
    ...base,
    messages: [
      ...base.messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'bash', arguments: '{"command":"npm test"}' } }] },
      { role: 'tool', tool_call_id: 'call_A', content: `> shop@1.0.0 test\n${'. '.repeat(3000)}\n12 passing` },
    ],
  }
}

describe('the look for long strings in a tail', () => {
  it('goes through each value at most twice, however deep the long strings are; the hash is as before', () => {
    // Arrays 200 deep with a long string at the bottom (each level's look went down to it again:
    // ~50 times the values here, ~40 million for a 10 MB body of it), and each level ending in one.
    const deep = { messages: [user('task'), user('x'), user(Array.from({ length: 20 }, () => chain(200, 1)))] }
    const ends = { messages: [user('task'), user('x'), user(Array.from({ length: 5 }, () => chain(200, LONG)))] }
    const got = { deep: work(deep), ends: work(ends) }
    // Every value here is gone through (each array holds a long string), none more than twice.
    expect(got.deep.scanned).toBeGreaterThanOrEqual(values(deep))
    expect(got.deep.scanned).toBeLessThanOrEqual(2 * values(deep))
    expect(got.ends.scanned).toBeGreaterThanOrEqual(values(ends))
    expect(got.ends.scanned).toBeLessThanOrEqual(2 * values(ends))
    // What was written into the hash is the same as before: the look's answers are.
    expect({ deep: got.deep.hash, ends: got.ends.hash }).toEqual({
      deep: 'kMsmd5PGqYLOOO3xik9L5OIl3a6xxRYQ9Frucsmkos4',
      ends: 'Zk2S6y4wMkouhNSLEJOLPqCv_lK9QMqk-RInzcwnr7M',
    })
  })

  it('goes through no more values for a bigger tail: past a bound, the tail is hashed from its JSON text', () => {
    // A long string, then many small values: each was written on its own (~5 times JSON.parse's time).
    const after = (n: number, last = 1) => ({ messages: [user('task'), user('x'), user([LONG, ...Array(n - 1).fill(1), last])] })
    const chains = (n: number) => ({ messages: [user('task'), user('x'), user(Array.from({ length: n }, () => chain(200, 1)))] })
    for (const [small, big] of [[after(100_000), after(200_000)], [chains(100), chains(200)]]) {
      const a = work(small)
      const b = work(big)
      expect(b.scanned).toBe(a.scanned)
      expect(b.scanned).toBeLessThan(values(small) / 2)
      expect(b.hash).toBe(createHash('sha256').update('J').update(JSON.stringify(big.messages.slice(-2))).digest('base64url'))
    }
    expect(work(after(200_000)).hash).toBe(work(structuredClone(after(200_000))).hash)
    expect(work(after(200_000)).hash).not.toBe(work(after(200_000, 2)).hash)
  })

  it('counts no long string toward that bound: a tail of many long strings is still written with each as it is', () => {
    // 20,000 long strings (the same one, to keep the test small) are 80 MB of JSON text, whose
    // escaping the hash is spared: each is ≥ 4,096 characters of body, gone through once or twice.
    const many = { messages: [user('task'), user('x'), user(Array(20_000).fill(LONG))] }
    const got = work(many)
    expect(got.scanned).toBeGreaterThan(20_000)
    expect(got.scanned).toBeLessThanOrEqual(2 * values(many))
    expect(got.hash).not.toBe(createHash('sha256').update('J').update(JSON.stringify(many.messages.slice(-2))).digest('base64url'))
  })

  it('hashes normal requests as before, going through each value at most twice', () => {
    const bodies = { claudeCode: claudeCode(), codex: codex(), chat: chat() }
    const got = Object.fromEntries(Object.entries(bodies).map(([k, b]) => [k, work(b)]))
    for (const [k, b] of Object.entries(bodies)) expect(got[k].scanned, k).toBeLessThanOrEqual(2 * values(b))
    // The hashes written before the look's work was bounded: a loop a running Burnrate has begun
    // to count is counted on after an update, and the written form is unchanged.
    expect(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.hash]))).toEqual({
      claudeCode: 'WXIk2igX7ry7i6rFGanTxl2e_iBBHpp8ZVKFQ0c1cgY',
      codex: 'JvZzWE9fp_pfJYlQ12qMGXWVGa1SrDSR5cubPhmslPQ',
      chat: 'AC5v5t43ZVBmxrvMTJ-YggEux4DKk7kYUbNgRMUFdo0',
    })
  })
})

describe('the written form is a function of the JSON text', () => {
  it('keys left out of the JSON text (tool call ids) do not count toward how far a look goes', () => {
    // After its id is left out, a tool result with one has the same JSON text as one without: the
    // same hash, wherever its long string falls against the look's 256 values.
    const result = (k: number, id?: string) => ({
      messages: [user('task'), 1, user([{ type: 'tool_result', ...(id ? { tool_use_id: id } : {}), content: [...Array(k).fill('p'), LONG] }])],
    })
    for (let k = 240; k < 256; k++) expect(work(result(k, 'toolu_01')).hash, `${k}`).toBe(work(result(k)).hash)
  })
})
