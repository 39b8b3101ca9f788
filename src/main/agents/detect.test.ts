import { describe, expect, it } from 'vitest'
import { detectAgent } from './detect'

describe('detectAgent', () => {
  it('ignores session ids that are not printable tokens or are too long', () => {
    expect(detectAgent({ 'user-agent': 'opencode/1.0.0', 'x-session-affinity': 'has space' }, undefined).session).toBe('')
    expect(detectAgent({ 'user-agent': 'opencode/1.0.0', 'x-session-affinity': 'x'.repeat(201) }, undefined).session).toBe('')
    expect(detectAgent({ 'user-agent': 'opencode/1.0.0', 'x-session-affinity': 'ses_1' }, undefined).session).toBe('ses_1')
  })

  it('reads both Claude Code user_id formats, and the object form', () => {
    const ua = { 'user-agent': 'claude-cli/2.1.80 (external, cli)' }
    const legacy = { metadata: { user_id: 'user_abc_account_4e1f7f64-2b43-4bbf-9d6d-5a4a0f0e1b2c_session_11111111-2222-3333-4444-555555555555' } }
    const json = { metadata: { user_id: '{"device_id":"d","account_uuid":"","session_id":"aaaa-bbbb"}' } }
    const obj = { metadata: { user_id: { session_id: 'cccc-dddd' } } }
    expect(detectAgent(ua, legacy)).toMatchObject({ agent: 'claude-code', session: '11111111-2222-3333-4444-555555555555' })
    expect(detectAgent(ua, json).session).toBe('aaaa-bbbb')
    expect(detectAgent(ua, obj).session).toBe('cccc-dddd')
    expect(detectAgent(ua, { metadata: { user_id: '{not json' } }).session).toBe('')
  })

  it("takes Claude Code's X-Claude-Code-Session-Id header where the body has no metadata (its token counting)", () => {
    const h = { 'user-agent': 'claude-cli/2.1.332 (external, cli)', 'x-claude-code-session-id': 'ed661fe0-9b06-4511-bedb-5c36eaf0bcab' }
    expect(detectAgent(h, { model: 'claude-sonnet-4-5', messages: [] })).toMatchObject({ agent: 'claude-code', session: 'ed661fe0-9b06-4511-bedb-5c36eaf0bcab' })
    // The body's session first (the two are the same in every call Claude Code 2.1 sends).
    expect(detectAgent(h, { metadata: { user_id: '{"session_id":"aaaa-bbbb"}' } }).session).toBe('aaaa-bbbb')
  })

  it("recognises the bare SDKs whichever client class sends the call (the Python SDKs name it), and OpenAI's .NET library", () => {
    const cases: [string, string][] = [
      ['OpenAI/Python 1.109.1', 'openai-sdk'],
      ['AsyncOpenAI/Python 1.109.1', 'openai-sdk'],
      ['AzureOpenAI/Python 1.109.1', 'openai-sdk'],
      ['AsyncAzureOpenAI/Python 1.109.1', 'openai-sdk'],
      ['OpenAI/2.1.0 (.NET 8.0.0; Microsoft Windows 10.0.22631)', 'openai-sdk'],
      ['Anthropic/Python 0.68.0', 'anthropic-sdk'],
      ['AsyncAnthropic/Python 0.68.0', 'anthropic-sdk'],
      ['AnthropicBedrock/Python 0.68.0', 'anthropic-sdk'],
      ['AsyncAnthropicVertex/Python 0.68.0', 'anthropic-sdk'],
      ['OpenAIish/Python 1.0', ''],
    ]
    for (const [ua, agent] of cases) expect(detectAgent({ 'user-agent': ua }, undefined).agent, ua).toBe(agent)
  })

  it("reads Codex 0.169's thread-id and session-id headers (hyphens), before the older session_id", () => {
    const ua = { 'user-agent': 'codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.169.0)', originator: 'codex_exec' }
    const id = '01a207ca-e8ad-7d21-b957-ad94c2eef955'
    expect(detectAgent({ ...ua, 'session-id': id, 'thread-id': id }, { prompt_cache_key: 'other' })).toEqual({ agent: 'codex', session: id, project: '', client: 'codex' })
    expect(detectAgent({ ...ua, 'thread-id': id }, undefined).session).toBe(id)
    expect(detectAgent({ ...ua, 'session-id': id }, undefined).session).toBe(id)
    expect(detectAgent({ ...ua, session_id: 'old-style' }, undefined).session).toBe('old-style')
  })

  it('does not take opencode or the Anthropic SDK for Claude Code because of a claude-code beta header', () => {
    const h = { 'user-agent': 'Anthropic/JS 0.65.0', 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' }
    expect(detectAgent(h, undefined).agent).toBe('anthropic-sdk')
  })

  it('recognises Aider on the Anthropic API by its system prompt', () => {
    const body = { system: [{ type: 'text', text: 'Act as an expert architect engineer and provide direction to your editor engineer.' }], messages: [] }
    expect(detectAgent({ 'user-agent': 'litellm/1.77.0' }, body).agent).toBe('aider')
  })

  it('takes a generic x-session-id from any client', () => {
    expect(detectAgent({ 'user-agent': 'OpenAI/Python 1.109.1', 'x-session-id': 'job-7' }, undefined)).toMatchObject({ agent: 'openai-sdk', session: 'job-7' })
  })

  it("recognises Gemini CLI by Cloud Code's User-Agent in VS Code, not Google's VS Code extension", () => {
    const vscode = 'CloudCodeVSCode/0.61.0 (aidev_client; os_type=Linux; os_version=6.8.0; arch=x64; host_path=VSCode/1.101.0; proxy_client=geminicli)'
    expect(detectAgent({ 'user-agent': vscode }, undefined).agent).toBe('gemini-cli')
    expect(detectAgent({ 'user-agent': 'GeminiCLI-acp-zed/0.61.0/gemini-2.5-pro (linux; x64; zed)' }, undefined).agent).toBe('gemini-cli')
    expect(detectAgent({ 'user-agent': 'CloudCodeVSCode/2.40.0 (aidev_client; os_type=Linux)' }, undefined).agent).toBe('')
  })

  it('recognises further agents by their User-Agent', () => {
    expect(detectAgent({ 'user-agent': 'Continue/1.2.3 (VS Code; extension)' }, undefined).agent).toBe('continue')
    expect(detectAgent({ 'user-agent': 'Continue-CLI/1.0.0' }, undefined).agent).toBe('continue')
    expect(detectAgent({ 'user-agent': 'Cline/3.30.1' }, undefined).agent).toBe('cline')
    expect(detectAgent({ 'user-agent': 'QwenCode/0.12.3 (linux; x64)' }, undefined).agent).toBe('qwen-code')
    expect(detectAgent({ 'user-agent': 'GitHubCopilotChat/0.38.0' }, undefined).agent).toBe('github-copilot')
    expect(detectAgent({ 'user-agent': 'Mozilla/5.0' }, undefined).agent).toBe('')
  })

  it("recognises Qwen Code on an Anthropic-compatible API, where it sends Claude Code's User-Agent, by its prompt or its tools", () => {
    // Qwen Code 0.24 to any Anthropic base URL but api.anthropic.com (as the real-agents suite records it).
    const h = { 'user-agent': 'claude-cli/0.24.4 (external, cli)', 'x-app': 'cli' }
    const context = [
      { type: 'text', text: '<system-reminder>\nThe following skills are available for use with the Skill tool.\n</system-reminder>' },
      { type: 'text', text: "<system-reminder>\nThis is the Qwen Code. We are setting up the context for our chat.\nI'm currently working in the directory: /home/dev/shop\nHere is the folder structure" },
      { type: 'text', text: 'Say hello.' },
    ]
    const main = { system: [{ type: 'text', text: 'You are Qwen Code, a non-interactive CLI agent developed by Alibaba Group.' }], messages: [{ role: 'user', content: context }] }
    // Its memory extractor's call: another prompt, its own tools.
    const side = { system: [{ type: 'text', text: 'You are now acting as the managed memory extraction subagent for an AI coding assistant.' }], tools: [{ name: 'read_file' }, { name: 'run_shell_command' }], messages: [] }
    expect(detectAgent(h, main)).toEqual({ agent: 'qwen-code', session: '', project: '/home/dev/shop', client: 'qwen-code' })
    expect(detectAgent(h, side)).toMatchObject({ agent: 'qwen-code', client: 'qwen-code' })
    expect(detectAgent({ 'user-agent': 'QwenCode/0.24.4 (linux; x64)' }, { messages: [{ role: 'system', content: main.system[0].text }, { role: 'user', content: context }] }).project).toBe('/home/dev/shop')
    expect(detectAgent(h, { ...side, messages: [{ role: 'user', content: context }] }).project).toBe('/home/dev/shop')
    // Claude Code itself (its session in metadata or its header) stays Claude Code, whatever its tools.
    const cc = { 'user-agent': 'claude-cli/2.1.332 (external, cli)', 'x-claude-code-session-id': 'ed661fe0-9b06-4511-bedb-5c36eaf0bcab' }
    expect(detectAgent(cc, side).agent).toBe('claude-code')
    expect(detectAgent(h, { ...side, metadata: { user_id: '{"session_id":"aaaa-bbbb"}' } }).agent).toBe('claude-code')
    expect(detectAgent(h, { system: 'You are Claude Code', tools: [{ name: 'Read' }, { name: 'Bash' }] }).agent).toBe('claude-code')
  })

  it("recognises Cline's CLI, which sends the AI SDK's User-Agent, by its system prompt", () => {
    const ua = { 'user-agent': 'ai-sdk/openai-compatible/3.0.37 ai-sdk/provider-utils/5.0.30 runtime/bun/1.3.13' }
    const text = 'You are Cline, an AI coding agent.\n<env>\n1. Platform: linux\n4. Working Directory: /home/dev/shop\n</env>'
    expect(detectAgent(ua, { messages: [{ role: 'system', content: text }, { role: 'user', content: 'hi' }] })).toEqual({ agent: 'cline', session: '', project: '/home/dev/shop', client: 'cline' })
    expect(detectAgent({ 'user-agent': 'ai-sdk/anthropic/3.0.0' }, { system: [{ type: 'text', text }] }).agent).toBe('cline')
    expect(detectAgent(ua, { messages: [{ role: 'user', content: 'You are Cline' }] }).agent).toBe('')
  })

  it('takes the project from X-Burnrate-Project, else the working directory Claude Code, Codex or opencode states', () => {
    const cc = { 'user-agent': 'claude-cli/2.1.5 (external, cli)' }
    const system = [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: 'text', text: 'Here is useful information about the environment you are running in:\n<env>\nWorking directory: /home/dev/shop\nIs directory a git repo: Yes\n</env>' },
    ]
    expect(detectAgent(cc, { system }).project).toBe('/home/dev/shop')
    expect(detectAgent({ ...cc, 'x-burnrate-project': 'billing' }, { system }).project).toBe('billing')
    expect(detectAgent(cc, { system: 'no env here' }).project).toBe('')
    // Claude Code 2.1 (the version the real-agents suite runs): "# Environment … - Primary working directory: /path".
    const current = [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      {
        type: 'text',
        text: '# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/shop\n - Is a git repository: true\n - Platform: linux',
      },
    ]
    expect(detectAgent({ 'user-agent': 'claude-cli/2.1.332 (external, cli)' }, { system: current }).project).toBe('/home/dev/shop')
    // …which 2.1.332 sends as a message of role system after the user's first.
    const messages = [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>…</system-reminder>' }, { type: 'text', text: 'Say hello.' }] },
      { role: 'system', content: [current[1]] },
    ]
    expect(detectAgent({ 'user-agent': 'claude-cli/2.1.332 (external, sdk-cli)' }, { system: current.slice(0, 1), messages }).project).toBe('/home/dev/shop')
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/home/dev/api</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'add a route' }] },
    ]
    expect(detectAgent({ 'user-agent': 'codex_cli_rs/0.58.0 (Debian; x86_64) xterm' }, { input }).project).toBe('/home/dev/api')
    expect(detectAgent({ 'user-agent': 'curl/8' }, { input }).project).toBe('')
    // opencode reads only its system text: a directory named in the conversation is not its project.
    const env = '<env>\n  Working directory: /home/dev/shop\n</env>'
    const oc = { 'user-agent': 'opencode/1.18.33' }
    expect(detectAgent(oc, { messages: [{ role: 'system', content: env }] }).project).toBe('/home/dev/shop')
    expect(detectAgent(oc, { input: [{ role: 'developer', content: [{ type: 'input_text', text: env }] }] }).project).toBe('/home/dev/shop')
    expect(detectAgent(oc, { messages: [{ role: 'user', content: env }] }).project).toBe('')
    expect(detectAgent(oc, { contents: [{ role: 'user', parts: [{ text: env }] }] }).project).toBe('')
  })
})
