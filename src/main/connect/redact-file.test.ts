import { describe, expect, it } from 'vitest'
import { redactFile } from './redact-file'

const OAI = 'sk-proj-Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9P0ZaXsCdVfBg-wxyz'
const lines = (s: string): number => s.split('\n').length

describe('redactFile: a file shown by its structure, secrets hinted by the key they sit under', () => {
  it('TOML: multi-line strings under secret names hinted on their own lines, headers hinted, variables\' names and comments as the line rules say', () => {
    const toml = [
      '# old: OPENAI_API_KEY=' + OAI,
      'model = "o3"',
      'experimental_bearer_token = """',
      'corp-gw-4f1d9a7c2b',
      '"""',
      '[model_providers.corp]',
      'env_key_instructions = "Ask the platform team"',
      'http_headers = { "X-Corp-Gateway" = """',
      'gw-77aa-31bb-92""", "X-Title" = "Corp tools", "Content-Type" = "application/json", "User-Agent" = "corp-cli/2.1.0", "X-Flag" = "beta" }',
      'notify = """curl -H X-Api-Key=abcdefghijkl\\nmore"""',
      "env_http_headers = { 'X-Corp-Id' = 'CORP_GATEWAY_VAR', 'X-Corp' = 'corp-secret-77' }",
      "[mcp_servers.vault.env]",
      "VAULT_TOKEN = '''",
      '-----BEGIN TOKEN-----',
      'c2hvcnQ=',
      "-----END TOKEN-----'''",
      '',
    ].join('\n')
    const shown = redactFile(toml, 'toml')
    expect(shown).toBe(
      [
        '# old: OPENAI_API_KEY=sk-…wxyz',
        'model = "o3"',
        'experimental_bearer_token = """',
        'cor…7c2b',
        '"""',
        '[model_providers.corp]',
        'env_key_instructions = "Ask the platform team"',
        'http_headers = { "X-Corp-Gateway" = """',
        'gw-…b-92""", "X-Title" = "Corp tools", "Content-Type" = "application/json", "User-Agent" = "corp-cli/2.1.0", "X-Flag" = "beta" }',
        'notify = "curl -H X-Api-Key=abc…ijkl\\nmore"',
        "env_http_headers = { 'X-Corp-Id' = 'CORP_GATEWAY_VAR', 'X-Corp' = 'cor…t-77' }",
        "[mcp_servers.vault.env]",
        "VAULT_TOKEN = '''",
        '---…----',
        '',
        "'''",
        '',
      ].join('\n'),
    )
    expect(lines(shown)).toBe(lines(toml))
  })

  it('JSON with comments: a value on the line after its key, an array under a token name, a string holding KEY=value, a comment', () => {
    const json = [
      '{',
      '  // ANTHROPIC_API_KEY=corp-secret-0123456789',
      '  "env": {',
      '    "ANTHROPIC_AUTH_TOKEN":',
      '      "corp-token-0123456789",',
      '    "CORP_TOKENS": ["tok-aaaa-1111-bbbb",',
      '      "tok-cccc-2222-dddd"],',
      '    "MAX_THINKING_TOKENS": "8000"',
      '  },',
      '  "permissions": { "allow": ["Bash(CORP_KEY=corp-secret-0123456789 make)"] },',
      '  "apiKeyHelper": "~/bin/corp-key.sh",',
      '  "selectedAuthType": "oauth-personal"',
      '}',
    ].join('\r\n')
    expect(redactFile(json, 'json')).toBe(
      [
        '{',
        '  // ANTHROPIC_API_KEY=cor…6789',
        '  "env": {',
        '    "ANTHROPIC_AUTH_TOKEN":',
        '      "cor…6789",',
        '    "CORP_TOKENS": ["tok…bbbb",',
        '      "tok…dddd"],',
        '    "MAX_THINKING_TOKENS": "8000"',
        '  },',
        '  "permissions": { "allow": ["Bash(CORP_KEY=cor…6789 make)"] },',
        '  "apiKeyHelper": "~/bin/corp-key.sh",',
        '  "selectedAuthType": "oauth-personal"',
        '}',
      ].join('\r\n'),
    )
  })

  it('a byte order mark is kept; text that does not parse is read line by line', () => {
    expect(redactFile('\uFEFF{"apiKey": "corp-secret-0123456789"}', 'json')).toBe('\uFEFF{"apiKey": "cor…6789"}')
    expect(redactFile('{"apiKey": "corp-secret-0123456789", oops', 'json')).toBe('{"apiKey": "cor…6789", oops')
    expect(redactFile('token = corp-secret-0123456789\n', 'toml')).toBe('token = cor…6789\n')
    expect(redactFile(`export OPENAI_API_KEY=${OAI}\n`, 'shell')).toBe('export OPENAI_API_KEY=sk-…wxyz\n')
  })

  it('dotenv and shell: a quoted value over lines under a secret\'s name hinted on its first line, the lines kept; others line by line', () => {
    const env = ['A=1', "export CORP_KEY='abc", 'corp-0123456789', "def' # note", 'NOTE="two', 'lines"', 'OPEN_TOKEN="never closed', 'x=1', ''].join('\r\n')
    expect(redactFile(env, 'dotenv')).toBe(['A=1', "export CORP_KEY='abc…def", '', "' # note", 'NOTE="two', 'lines"', 'OPEN_TOKEN="never closed', 'x=1', ''].join('\r\n'))
    expect(redactFile(env, 'shell')).toBe(redactFile(env, 'dotenv'))
  })

  it('JSON: a PEM key written with \\n escapes under a name that says nothing has its body\'s lines hinted, its text on one line as it was', () => {
    const body = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Zx9Qw8Er7Ty6'
    const json = `{\n  "env": { "GOOGLE_SERVICE_ACCOUNT": "-----BEGIN PRIVATE KEY-----\\n${body}\\n${body}\\n-----END PRIVATE KEY-----\\n" }\n}\n`
    const shown = redactFile(json, 'json')
    expect(shown).not.toContain(body.slice(4, 20))
    expect(shown).toBe('{\n  "env": { "GOOGLE_SERVICE_ACCOUNT": "-----BEGIN PRIVATE KEY-----\\nMII…7Ty6\\nMII…7Ty6\\n-----END PRIVATE KEY-----\\n" }\n}\n')
  })
})
