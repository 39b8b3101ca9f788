import { describe, expect, it } from 'vitest'
import { redactLine, redactText } from './redact'

const ANT = 'sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-abcd'
const OAI = 'sk-proj-Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9P0ZaXsCdVfBg-wxyz'

describe('redactLine: secrets hinted as the ledger names keys, everything else as it was', () => {
  it.each([
    // JSON (Claude Code's env block, opencode's provider options), also on one line.
    [`"ANTHROPIC_API_KEY": "${ANT}",`, `"ANTHROPIC_API_KEY": "sk-…abcd",`],
    [`{"model":"opus","env":{"ANTHROPIC_AUTH_TOKEN":"corp-token-0123456789"}}`, `{"model":"opus","env":{"ANTHROPIC_AUTH_TOKEN":"cor…6789"}}`],
    [`"apiKey": "${ANT}"`, `"apiKey": "sk-…abcd"`],
    [`"headers": { "Authorization": "Bearer abcdefghijklmnop" }`, `"headers": { "Authorization": "Bearer abc…mnop" }`],
    [`"ANTHROPIC_CUSTOM_HEADERS": "x-api-key: supersecretvalue42"`, `"ANTHROPIC_CUSTOM_HEADERS": "x-api-key: sup…ue42"`],
    [`"ANTHROPIC_CUSTOM_HEADERS": "X-Corp-Auth: abc123def456ghi"`, `"ANTHROPIC_CUSTOM_HEADERS": "X-Corp-Auth: abc…6ghi"`],
    // TOML (Codex).
    [`experimental_bearer_token = "${OAI}"`, `experimental_bearer_token = "sk-…wxyz"`],
    [`http_headers = { "Authorization" = "Bearer abcdefghijklmnop" }`, `http_headers = { "Authorization" = "Bearer abc…mnop" }`],
    [`env_http_headers = { "X-Api-Key" = "CORP_KEY_VAR" }`, `env_http_headers = { "X-Api-Key" = "CORP_KEY_VAR" }`],
    // dotenv and shell profiles.
    [`GEMINI_API_KEY=AIzaSyD-Fake9Key8For7Tests6Only5Xy4Zq3`, `GEMINI_API_KEY=AIz…4Zq3`],
    [`export OPENAI_API_KEY='${OAI}' # work`, `export OPENAI_API_KEY='sk-…wxyz' # work`],
    [`export DB_PASSWORD="hunter2-correct-horse"`, `export DB_PASSWORD="hun…orse"`],
    [`set -gx OPENAI_API_KEY ${OAI}`, `set -gx OPENAI_API_KEY sk-…wxyz`],
    [`set -gx CORP_SECRET hunter2-correct-horse`, `set -gx CORP_SECRET hun…orse`],
    // A provider's key shape under any name, or in a command.
    [`alias gpt='OPENAI=${OAI} gpt'`, `alias gpt='OPENAI=sk-…wxyz gpt'`],
    [`XAI=xai-Fake1234567890abcdefghijKLMNOPqrstu9876`, `XAI=xai…9876`],
    [`"apiKeyHelper": "echo ${ANT}"`, `"apiKeyHelper": "echo sk-…abcd"`],
    // A URL's password and a query's key.
    [`"baseURL": "https://me:hunter2-secret-pw@gw.corp/v1?api_key=abcdefghijklmnop&x=1"`, `"baseURL": "https://me:hun…t-pw@gw.corp/v1?api_key=abc…mnop&x=1"`],
    // A PEM key's body on a line of its own.
    [`MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7`, `MII…AQC7`],
  ])('%s', (line, shown) => {
    expect(redactLine(line)).toBe(shown)
  })

  it.each([
    `"MAX_THINKING_TOKENS": "8000"`,
    `max_tokens = 4096`,
    `env_key = "OPENAI_API_KEY"`,
    `"apiKey": "{env:ANTHROPIC_API_KEY}"`,
    `export OPENAI_API_KEY=$CORP_OPENAI_KEY`,
    `"ANTHROPIC_BASE_URL": "http://127.0.0.1:8787"`,
    `openai_base_url = "http://127.0.0.1:8787/v1"`,
    `model = "o3"  # keep`,
    `"env": {`,
    `[model_providers.secret-gateway]`,
    `export NO_PROXY="\${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"`,
    `# >>> burnrate >>>`,
    `"disableTokenCounting": true`,
    `"author": "Jane Doe <jane@example.com>"`,
    `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787`,
    // How or where a key is got, under a key-like name: a command, a file, a variable's name, a kind of login.
    `"apiKeyHelper": "~/bin/corp-key.sh"`,
    `"awsAuthRefresh": "aws sso login --profile corp"`,
    `"selectedAuthType": "oauth-personal"`,
    `env_key_instructions = "Set CORP_KEY from the vault"`,
    `bearer_token_env_var = "corp_gateway_token"`,
    `"keyFile": "/etc/corp/gateway.pem"`,
  ])('%s: no secret, shown as it is', (line) => {
    expect(redactLine(line)).toBe(line)
  })

  it('a note keeps its line breaks', () => {
    expect(redactText(`a ${OAI}\r\nb`)).toBe('a sk-…wxyz\r\nb')
  })
})
