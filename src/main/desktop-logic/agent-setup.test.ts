import { describe, expect, it } from 'vitest'
import { agentSetup } from './agent-setup'

describe('agentSetup', () => {
  it('gives shell exports with the server address', () => {
    expect(agentSetup('http://127.0.0.1:8787', 'darwin')).toBe(
      '# Burnrate: meter AI agents through http://127.0.0.1:8787\n' +
        'export OPENAI_BASE_URL=http://127.0.0.1:8787/openai/v1\n' +
        'export ANTHROPIC_BASE_URL=http://127.0.0.1:8787/anthropic\n' +
        'export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787/gemini\n' +
        'export CODE_ASSIST_ENDPOINT=http://127.0.0.1:8787/code-assist\n' +
        'export ANTHROPIC_VERTEX_BASE_URL=http://127.0.0.1:8787/vertex/v1\n' +
        'export GOOGLE_VERTEX_BASE_URL=http://127.0.0.1:8787/vertex\n' +
        'export NO_PROXY="${NO_PROXY:-$no_proxy}"\n' +
        'export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost" no_proxy="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"\n',
    )
  })
  it('gives PowerShell on Windows, with the real port', () => {
    const text = agentSetup('http://127.0.0.1:8790/', 'win32')
    expect(text).toContain('$env:OPENAI_BASE_URL = "http://127.0.0.1:8790/openai/v1"\r\n')
    expect(text).toContain('$env:ANTHROPIC_BASE_URL = "http://127.0.0.1:8790/anthropic"\r\n')
    expect(text).toContain('$env:CODE_ASSIST_ENDPOINT = "http://127.0.0.1:8790/code-assist"\r\n')
    expect(text).toContain('$env:ANTHROPIC_VERTEX_BASE_URL = "http://127.0.0.1:8790/vertex/v1"\r\n')
    expect(text).toContain('$env:GOOGLE_VERTEX_BASE_URL = "http://127.0.0.1:8790/vertex"\r\n')
    expect(text).toContain('$env:NO_PROXY = ("$env:NO_PROXY,127.0.0.1,localhost").TrimStart(",")\r\n')
  })
})
