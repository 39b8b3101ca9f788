/**
 * The dashboard's Content-Security-Policy: everything from this server only, no inline or
 * eval'd script. Vue and Chart.js set styles through the CSSOM (element.style), which CSP
 * does not restrict, so no 'unsafe-inline' is needed for styles either. Vite may inline small
 * assets as data: URIs, hence `data:` for images and fonts.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** Headers sent with every dashboard page and asset. */
export const UI_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
}
