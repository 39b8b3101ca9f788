import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { dotenvFormat } from '../formats/dotenv'
import { anyExists, onPath } from '../paths'
import type { AgentConnector, ConnectContext } from '../types'

/**
 * Gemini CLI's home: `$GEMINI_CLI_HOME` when set, else the user's (its `homedir()`, which both its
 * env file and its logs, ../../import/sources/gemini-cli.ts, are found under).
 */
function geminiHome(ctx: ConnectContext): string {
  return ctx.env.GEMINI_CLI_HOME || ctx.home
}

/**
 * The env file Gemini CLI reads for a project that has none of its own: it loads ONE file, the
 * first of the folders' `.gemini/.env` and `.env` walking up from the project, else in its home
 * `.gemini/.env`, else `.env` (Gemini CLI 0.61's `findEnvFile`). A user keeping `GEMINI_API_KEY`
 * in `~/.env` would lose it to a `~/.gemini/.env` made for Burnrate: the settings go where Gemini
 * CLI already reads, and only with neither file is `.gemini/.env` made.
 */
function envFile(ctx: ConnectContext): string {
  const own = join(geminiHome(ctx), '.gemini', '.env')
  const home = join(geminiHome(ctx), '.env')
  return !existsSync(own) && existsSync(home) ? home : own
}

/**
 * Gemini CLI: `GOOGLE_GEMINI_BASE_URL` (its calls with an API key), `CODE_ASSIST_ENDPOINT`
 * (logged in with Google: Gemini Code Assist, ../../providers/code-assist.ts) and
 * `GOOGLE_VERTEX_BASE_URL` (on Vertex AI, ../../providers/vertex.ts) in the env file it loads at
 * start (`envFile`; a `.env` in the project folder, when there is one, is read instead).
 */
export const geminiCli: AgentConnector = {
  id: 'gemini-cli',
  name: 'Gemini CLI',
  recordedAs: ['gemini-cli'],
  installed: (ctx) => anyExists(join(geminiHome(ctx), '.gemini')) || onPath(ctx, 'gemini'),
  files: (ctx, url) => [
    {
      path: envFile(ctx),
      format: dotenvFormat,
      env: [],
      settings: [
        { key: ['GOOGLE_GEMINI_BASE_URL'], value: url },
        { key: ['CODE_ASSIST_ENDPOINT'], value: `${url}/code-assist` },
        { key: ['GOOGLE_VERTEX_BASE_URL'], value: `${url}/vertex` },
      ],
    },
  ],
  note: 'Applies to Gemini CLI sessions started from now on, unless the project folder has its own .env.',
}
