import { noProxyLines } from '../../../shared/no-proxy'

/** Copyable setup for each agent and SDK, for a Burnrate server at `origin` (`http://127.0.0.1:8787`). */
export interface Snippet {
  id: string
  name: string
  /** One or more blocks; each is copied on its own. */
  blocks: { label: string; lang: string; code: string }[]
  note?: string
}

export function setupSnippets(origin: string): Snippet[] {
  const v1 = `${origin}/v1`
  return [
    {
      id: 'claude-code',
      name: 'Claude Code',
      blocks: [
        { label: 'Shell (before starting claude)', lang: 'sh', code: `export ANTHROPIC_BASE_URL=${origin}\nclaude` },
        {
          label: 'Or for every session: ~/.claude/settings.json',
          lang: 'json',
          code: `{\n  "env": {\n    "ANTHROPIC_BASE_URL": "${origin}"\n  }\n}`,
        },
        {
          label: 'On Vertex AI (with CLAUDE_CODE_USE_VERTEX, its project and region set as usual; it gets its Google token as usual)',
          lang: 'sh',
          code: `export ANTHROPIC_VERTEX_BASE_URL=${origin}/vertex/v1\nclaude`,
        },
        {
          label: 'On Amazon Bedrock with a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK, with CLAUDE_CODE_USE_BEDROCK and AWS_REGION set as usual): your region in the address',
          lang: 'sh',
          code: `export ANTHROPIC_BEDROCK_BASE_URL=${origin}/bedrock/us-east-1\nclaude`,
        },
        {
          label: 'On Microsoft Foundry (with CLAUDE_CODE_USE_FOUNDRY and its API key or Entra ID login as usual, ANTHROPIC_FOUNDRY_RESOURCE unset): your resource, https://<resource>.services.ai.azure.com, is providers.foundry.base_url in the config',
          lang: 'sh',
          code: `export ANTHROPIC_FOUNDRY_BASE_URL=${origin}/foundry/anthropic\nclaude`,
        },
        {
          label: "Through OpenRouter (OpenRouter's own setup, with Burnrate's address for https://openrouter.ai/api)",
          lang: 'sh',
          code: `export ANTHROPIC_BASE_URL=${origin}/openrouter\nexport ANTHROPIC_AUTH_TOKEN="$OPENROUTER_API_KEY"\nexport ANTHROPIC_API_KEY=""\nclaude`,
        },
        {
          label:
            "On DeepSeek (the vendor's own setup with Burnrate's address for https://api.deepseek.com/anthropic); …/moonshot/anthropic for Moonshot's Kimi, …/zai/anthropic for Z.ai's GLM, with their key and models",
          lang: 'sh',
          code: `export ANTHROPIC_BASE_URL=${origin}/deepseek/anthropic\nexport ANTHROPIC_AUTH_TOKEN="$DEEPSEEK_API_KEY"\nexport ANTHROPIC_MODEL=deepseek-chat ANTHROPIC_SMALL_FAST_MODEL=deepseek-chat\nclaude`,
        },
      ],
      note: 'Claude Code identifies itself, so its calls are attributed to it and its session automatically.',
    },
    {
      id: 'codex',
      name: 'Codex CLI',
      blocks: [
        {
          label: "~/.codex/config.toml: Codex's own OpenAI provider, with an API key or logged in with ChatGPT (it logs in as usual; talks WebSocket)",
          lang: 'toml',
          code: `openai_base_url = "${v1}"`,
        },
        {
          label: 'Or a provider of its own in ~/.codex/config.toml (key from OPENAI_API_KEY; talks SSE)',
          lang: 'toml',
          code: `model_provider = "burnrate"\n\n[model_providers.burnrate]\nname = "OpenAI via Burnrate"\nbase_url = "${v1}"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"`,
        },
        {
          label:
            'Logged in with ChatGPT (a plan), the first line is enough: its calls go on to the ChatGPT backend, as plan usage. To have its account and plugin checks go through Burnrate too, add:',
          lang: 'toml',
          code: `chatgpt_base_url = "${origin}/chatgpt/"`,
        },
      ],
      note: 'Codex 0.171 ignores OPENAI_BASE_URL. Its thread id is recorded as the session.',
    },
    {
      id: 'gemini-cli',
      name: 'Gemini CLI',
      blocks: [
        {
          label: 'Shell (before starting gemini): the first line for an API key, the second for a Google login (Gemini Code Assist), the third for Vertex AI',
          lang: 'sh',
          code: `export GOOGLE_GEMINI_BASE_URL=${origin}\nexport CODE_ASSIST_ENDPOINT=${origin}/code-assist\nexport GOOGLE_VERTEX_BASE_URL=${origin}/vertex\ngemini`,
        },
      ],
      note: 'Gemini CLI sends no session id with an API key, so its sessions are inferred (calls less than 30 minutes apart form one session); logged in with Google, its own session id is recorded.',
    },
    {
      id: 'opencode',
      name: 'opencode',
      blocks: [
        {
          label: 'opencode.json (in the project, or ~/.config/opencode/opencode.json), for Anthropic models',
          lang: 'json',
          code: `{\n  "$schema": "https://opencode.ai/config.json",\n  "provider": {\n    "anthropic": { "options": { "baseURL": "${v1}" } }\n  }\n}`,
        },
      ],
    },
    {
      id: 'qwen-code',
      name: 'Qwen Code',
      blocks: [
        {
          label:
            '~/.qwen/settings.json: your models with Burnrate as their base URL (an OpenAI-compatible key from OPENAI_API_KEY, an Anthropic key from ANTHROPIC_API_KEY), each call naming its session',
          lang: 'json',
          code: `{\n  "modelProviders": {\n    "openai": [\n      { "id": "gpt-4.1", "baseUrl": "${v1}", "envKey": "OPENAI_API_KEY", "generationConfig": { "customHeaders": { "X-Burnrate-Session": "\${session_id}" } } }\n    ],\n    "anthropic": [\n      { "id": "claude-sonnet-4-5", "baseUrl": "${origin}", "envKey": "ANTHROPIC_API_KEY", "generationConfig": { "customHeaders": { "X-Burnrate-Session": "\${session_id}" } } }\n    ]\n  },\n  "outboundCorrelation": { "allowDynamicHeaderValues": true }\n}`,
        },
        { label: 'Then pick one', lang: 'sh', code: 'qwen --auth-type openai -m gpt-4.1' },
      ],
      note: 'Qwen Code sends no session id of its own to such an address; the X-Burnrate-Session header above carries its session id (outboundCorrelation lets it fill in ${session_id}). Without it, its sessions are inferred.',
    },
    {
      id: 'cline',
      name: 'Cline CLI',
      blocks: [
        {
          label: 'Shell, once: an OpenAI-compatible provider at Burnrate (your key and model), then cline as usual',
          lang: 'sh',
          code: `cline auth -p openai -k "$OPENAI_API_KEY" -b ${v1} -m gpt-4.1\ncline`,
        },
      ],
      note: 'Cline sends no session id to such an address, so its sessions are inferred (calls less than 30 minutes apart form one session).',
    },
    {
      id: 'cursor',
      name: 'Cursor',
      blocks: [{ label: 'Settings → Models → OpenAI API Key → Override OpenAI Base URL', lang: 'text', code: v1 }],
      note: 'Cursor sends custom-key requests from its own servers, so they can reach Burnrate only at an address reachable from the internet (for example through a tunnel), not at 127.0.0.1.',
    },
    {
      id: 'aider',
      name: 'Aider',
      blocks: [
        { label: 'OpenAI models', lang: 'sh', code: `aider --openai-api-base ${v1}` },
        { label: 'Anthropic models', lang: 'sh', code: `export ANTHROPIC_BASE_URL=${origin}\naider --model sonnet` },
      ],
    },
    {
      id: 'openai-sdk',
      name: 'OpenAI SDK',
      blocks: [
        {
          label: 'TypeScript',
          lang: 'ts',
          code: `import OpenAI from 'openai'\n\nconst client = new OpenAI({\n  baseURL: '${v1}',\n  defaultHeaders: { 'X-Burnrate-Agent': 'my-agent', 'X-Burnrate-Session': 'run-42' },\n})`,
        },
        {
          label: 'Python',
          lang: 'py',
          code: `from openai import OpenAI\n\nclient = OpenAI(\n    base_url="${v1}",\n    default_headers={"X-Burnrate-Agent": "my-agent", "X-Burnrate-Session": "run-42"},\n)`,
        },
        { label: 'Or without code changes', lang: 'sh', code: `export OPENAI_BASE_URL=${v1}` },
      ],
    },
    {
      id: 'anthropic-sdk',
      name: 'Anthropic SDK',
      blocks: [
        {
          label: 'TypeScript',
          lang: 'ts',
          code: `import Anthropic from '@anthropic-ai/sdk'\n\nconst client = new Anthropic({\n  baseURL: '${origin}',\n  defaultHeaders: { 'X-Burnrate-Agent': 'my-agent', 'X-Burnrate-Session': 'run-42' },\n})`,
        },
        {
          label: 'Python',
          lang: 'py',
          code: `from anthropic import Anthropic\n\nclient = Anthropic(\n    base_url="${origin}",\n    default_headers={"X-Burnrate-Agent": "my-agent", "X-Burnrate-Session": "run-42"},\n)`,
        },
        { label: 'Or without code changes', lang: 'sh', code: `export ANTHROPIC_BASE_URL=${origin}` },
      ],
    },
    {
      id: 'corporate-proxy',
      name: 'Behind a proxy',
      blocks: [
        { label: 'Shell (where HTTPS_PROXY, HTTP_PROXY or ALL_PROXY is set), before starting the agents', lang: 'sh', code: noProxyLines(origin, 'linux') },
        { label: 'PowerShell', lang: 'powershell', code: noProxyLines(origin, 'win32') },
      ],
      note: "Without Burnrate's address in NO_PROXY, the agents send their calls for it to the proxy, which cannot reach this machine (Claude Code and Gemini CLI take HTTPS_PROXY even for http://). Without a proxy these lines change nothing.",
    },
  ]
}
