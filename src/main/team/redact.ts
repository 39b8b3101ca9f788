/** How much of a team server's error text is kept. */
export const SERVER_TEXT_MAX = 300

/**
 * A team server's error text as Burnrate logs and reports it: without the team token (a server
 * or a proxy in front of it may echo the Authorization header) and without any `Bearer` secret,
 * redacted before the text is cut so that no piece of the token survives the cut.
 */
export function serverText(text: string, token: string): string {
  // The whole token first: the Bearer pattern stops at `,` or `;`, which a token may hold.
  const out = token ? text.split(token).join('[team token]') : text
  return out.replace(/\bbearer\s+[^\s"',;]+/gi, 'Bearer [redacted]').slice(0, SERVER_TEXT_MAX)
}
