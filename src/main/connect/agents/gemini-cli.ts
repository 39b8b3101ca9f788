import { join } from 'node:path'
import { dotenvFormat } from '../formats/dotenv'
import { anyExists, onPath } from '../paths'
import type { AgentConnector } from '../types'

/**
 * Gemini CLI: `GOOGLE_GEMINI_BASE_URL` (its calls with an API key), `CODE_ASSIST_ENDPOINT`
 * (logged in with Google: Gemini Code Assist, ../../providers/code-assist.ts) and
 * `GOOGLE_VERTEX_BASE_URL` (on Vertex AI, ../../providers/vertex.ts) in `~/.gemini/.env`,
 * which Gemini CLI loads at start (a `.env` in the project folder, when there is one, is read instead).
 */
export const geminiCli: AgentConnector = {
  id: 'gemini-cli',
  name: 'Gemini CLI',
  recordedAs: ['gemini-cli'],
  installed: (ctx) => anyExists(join(ctx.home, '.gemini')) || onPath(ctx, 'gemini'),
  files: (ctx, url) => [
    {
      path: join(ctx.home, '.gemini', '.env'),
      format: dotenvFormat,
      settings: [
        { key: ['GOOGLE_GEMINI_BASE_URL'], value: url },
        { key: ['CODE_ASSIST_ENDPOINT'], value: `${url}/code-assist` },
        { key: ['GOOGLE_VERTEX_BASE_URL'], value: `${url}/vertex` },
      ],
    },
  ],
  note: 'Applies to Gemini CLI sessions started from now on, unless the project folder has its own .env.',
}
