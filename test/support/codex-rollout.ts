import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * A Codex rollout of one turn under `root` (a Codex sessions folder): session sess-a in
 * /home/dev/api, gpt-5-codex, 5,000 input and 400 output tokens at `ts` (2026-11-20's folder).
 */
export function writeCodexRollout(root: string, ts: number): void {
  mkdirSync(join(root, '2026/11/20'), { recursive: true })
  writeFileSync(join(root, '2026/11/20/rollout-a.jsonl'), [
    { timestamp: new Date(ts - 5000).toISOString(), type: 'session_meta', payload: { id: 'sess-a', cwd: '/home/dev/api' } },
    { timestamp: new Date(ts - 4000).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-codex', cwd: '/home/dev/api' } },
    { timestamp: new Date(ts).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
      total_token_usage: { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 },
      last_token_usage: { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 } } } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
}
