import { keyHint } from '../../shared/key-hint'

/**
 * Secrets in the text a plan shows (a diff's lines, changed and context alike, a setting's old
 * value, a note, an error): an agent's config file may hold API keys beside the keys Burnrate
 * sets (Claude Code's `env` block, an `export OPENAI_API_KEY=` in the shell profile, opencode's
 * `apiKey`), and a plan is printed by the CLI (terminal scrollback, CI logs) and answered to the
 * admin token. Each is shown as the ledger names a key (`sk-…abcd`, ../../shared/key-hint.ts), its
 * key name kept, so the diff still says what is there.
 */

/** A key whose value is a secret: `ANTHROPIC_API_KEY`, `apiKey`, `experimental_bearer_token`, `DB_PASSWORD`, `Authorization`, `X-Corp-Auth` (not `author`). */
const SECRET_NAME = /key|token|secret|passw(?:or)?d|auth(?!or)/i

/**
 * A key-like name whose value says how or where a secret is got, not the secret itself: a command
 * (Claude Code's `apiKeyHelper`, `awsAuthRefresh`, `awsCredentialExport`), a file or a folder, a
 * variable's name (Codex's `env_key`, `bearer_token_env_var`), a kind of login (Gemini CLI's
 * `selectedAuthType`, Codex's `preferred_auth_method`, `cli_auth_credentials_store`), words to
 * read (`env_key_instructions`). Its value is shown with only the secrets in its text hinted.
 */
const POINTER_NAME = /(?:helper|command|cmd|refresh|export|path|file|dir|_var|env_key|instructions|type|method|mode|store)$/i
/** Tables of HTTP headers (Codex's `http_headers`, opencode's `headers`): their values are often keys, whatever the header is called. */
const HEADERS = /headers$/i
/** Tables whose values name environment variables (Codex's `env_http_headers`), not secrets. */
const ENV_NAMES = /^env_/i

/** Whether the value of a key called `name` is a secret by its name (`ANTHROPIC_API_KEY`, `experimental_bearer_token`; not `apiKeyHelper`). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !POINTER_NAME.test(name)
}

/**
 * A string value of a parsed file as it is shown: `names` are the keys it sits under, from the top
 * (an array's items under the array's key). Hinted whole when its key says it is a secret, or it
 * is one header value of a table of headers shaped as a key (headerToken); else its text
 * with the secrets in it hinted (a header, a command, a URL with a password), line by line. Under
 * a table of variables' names (Codex's `env_http_headers`), a value shaped as a variable's name is one.
 */
export function shownString(value: string, names: readonly string[]): string {
  const name = names[names.length - 1] ?? ''
  const table = names[names.length - 2] ?? ''
  // A variable's name, as such a table holds; a key written there by mistake is judged as any.
  if ((ENV_NAMES.test(table) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value.trim())) || POINTER_NAME.test(name)) return redactText(value)
  if (isSecretName(name) || (HEADERS.test(table) && headerToken(value.trim()))) return hintedWhole(value)
  return redactText(value)
}

/**
 * Whether a header's value may be a key: one run without spaces, with a digit or long. Not a URL
 * (`HTTP-Referer`), a media type (`application/json`) or a product and its version
 * (`User-Agent: burnrate/1.0`), and not words (`X-Title: Corp tools`).
 */
function headerToken(v: string): boolean {
  if (v === '' || /\s/.test(v) || /^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return false
  if (/^[a-z]+\/[a-z0-9.+-]+$/i.test(v) && !/[0-9]/.test(v)) return false
  if (/^[A-Za-z][\w.-]*\/v?\d+(?:\.\d+)*$/.test(v)) return false
  return /[0-9]/.test(v) || v.length >= 20
}

/** `value` hinted as one secret (over lines, a PEM key in a multi-line string), the space around it kept. */
function hintedWhole(value: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(value)!
  return `${m[1]}${hinted(m[2])}${m[3]}`
}

/** A value as written: quoted, an auth scheme and its token, or bare (up to a space, a comma, a brace). */
const VALUE = /("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\x60[^\x60\n]*\x60|(?:Bearer|Basic|Token)\s+[^\s"'\x60,;]+|[^\s"'\x60,;&#{}[\]][^\s"'\x60,;&#}\]]*)/.source

/**
 * One `name = value` / `"name": value` / `name: value` in any of the agents' formats (JSON, TOML,
 * dotenv, shell, a header or a URL's query inside a string). Groups: 1-2 a quoted key's quote and
 * name, 3 a bare key, 4 the separator, 5 the value.
 */
const PAIR = new RegExp(/(?:(["'])([^"'\n]*?)\1|(?<=^|[\s{,;?&(])([A-Za-z_][A-Za-z0-9_.-]*))(\s*[:=]\s*)/.source + VALUE, 'g')
/** fish's `set -gx NAME value`. */
const FISH = new RegExp(/(?<=^|[\s;])(set\s+(?:-[A-Za-z]+\s+)*)([A-Za-z_][A-Za-z0-9_]*)(\s+)/.source + VALUE, 'g')

/** Keys in the shapes providers issue them, found wherever they are (a value under any name, a command). */
const PROVIDER_KEY =
  /(?<![A-Za-z0-9_-])(?:sk-ant-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{20,}|xai-[A-Za-z0-9_-]{16,}|gsk_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{16,}|pplx-[A-Za-z0-9]{16,})/g
/** `Bearer <token>` / `Basic <credentials>` anywhere (an Authorization header in a string). */
const AUTH_SCHEME = /\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]{8,})/gi
/** The password in a URL (`https://user:password@host`). */
const URL_PASSWORD = /(\/\/[^\s/:@"'`]+:)([^\s/@"'`…]+)@/g
/** A line that is one long opaque run (a PEM key's body, a token on a line of its own). */
const OPAQUE_LINE = /^(\s*)([A-Za-z0-9+/_-]{40,}={0,2})(\s*)$/

/**
 * Values under a secret-sounding name that are no secret, shown as they are: numbers and
 * booleans (`MAX_THINKING_TOKENS=8000`), the name of the variable a key is read from (Codex's
 * `env_key = "OPENAI_API_KEY"`) or a reference to one (`$OPENAI_API_KEY`, opencode's
 * `{env:ANTHROPIC_API_KEY}`), and nothing at all.
 */
function isPlain(v: string): boolean {
  return (
    v === '' ||
    /^-?\d+(?:\.\d+)?$/.test(v) ||
    /^(?:true|false|null|none|yes|no)$/i.test(v) ||
    /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(v) ||
    /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(v) ||
    /^\{(?:env|file):[^}]*\}$/.test(v)
  )
}

/** A secret value as the ledger names a key, an auth scheme kept (`Bearer cor…0e2d`). */
function hinted(v: string): string {
  // Hinted already (a value inside a string this line's pass went into first).
  if (isPlain(v) || v.includes('…')) return v
  const scheme = /^(Bearer|Basic|Token)(\s+)(.+)$/is.exec(v)
  if (scheme) return `${scheme[1]}${scheme[2]}${keyHint(scheme[3])}`
  return keyHint(v)
}

/** `raw` (a value as written, maybe quoted) with its secret hinted, its quotes kept. */
function hintedRaw(raw: string): string {
  const q = raw[0]
  if ((q === '"' || q === "'" || q === '`') && raw.length >= 2 && raw.endsWith(q)) return `${q}${hinted(raw.slice(1, -1))}${q}`
  return hinted(raw)
}

/** The value `raw` of the key `name`: hinted when the name says it is a secret, else any secret inside a string hinted. */
function valueOf(name: string, raw: string): string {
  if (isSecretName(name)) return hintedRaw(raw)
  // Under another name, a value may hold a header or a URL with a secret of its own (`?key=`).
  const q = raw[0]
  if ((q === '"' || q === "'" || q === '`') && raw.length >= 2 && raw.endsWith(q)) return `${q}${redactLine(raw.slice(1, -1))}${q}`
  return redactLine(raw)
}

/** One line of text (no line breaks in it) with its secrets hinted. */
export function redactLine(line: string): string {
  const opaque = OPAQUE_LINE.exec(line)
  if (opaque && /[0-9]/.test(opaque[2]) && /[A-Za-z]/.test(opaque[2])) return `${opaque[1]}${keyHint(opaque[2])}${opaque[3]}`
  const pairs = line
    .replace(PAIR, (_all: string, q: string | undefined, quoted: string | undefined, bare: string | undefined, sep: string, value: string) => {
      const key = q ? `${q}${quoted}${q}` : (bare as string)
      return `${key}${sep}${valueOf(quoted ?? bare ?? '', value)}`
    })
    .replace(FISH, (_all: string, set: string, name: string, sep: string, value: string) => `${set}${name}${sep}${valueOf(name, value)}`)
  return shapesOf(pairs)
}

/** Keys in a provider's shape, `Bearer` tokens and URLs' passwords anywhere in `text` (a last pass over a file shown by its structure). */
export function redactShapes(text: string): string {
  return text
    .split(/(\r?\n)/)
    .map((part, i) => (i % 2 === 1 ? part : shapesOf(part)))
    .join('')
}

/** redactShapes on one line. */
function shapesOf(line: string): string {
  return line
    .replace(URL_PASSWORD, (_all, head: string, password: string) => `${head}${keyHint(password)}@`)
    .replace(AUTH_SCHEME, (_all, scheme: string, space: string, token: string) => `${scheme}${space}${keyHint(token)}`)
    .replace(PROVIDER_KEY, (key) => keyHint(key))
}

/** Text of any number of lines (a note, an error message, a setting's value) with its secrets hinted. */
export function redactText(text: string): string {
  return text
    .split(/(\r?\n)/)
    .map((part, i) => (i % 2 === 1 ? part : redactLine(part)))
    .join('')
}
