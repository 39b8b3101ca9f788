/**
 * Writes text straight into bytes, for the export's CSV and JSON (./export-format.ts): a page's rows go into
 * one buffer as they are formatted, instead of being added up into a string that is then encoded
 * to UTF-8 again as a whole (each piece of a string made of thousands of pieces is copied once to
 * join them and once more to encode them). Whole numbers are written digit by digit; other numbers
 * as `String(n)` writes them (their text is ASCII); texts of ASCII characters byte by byte; any other
 * text through Node's UTF-8 encoder, so every byte is what `Buffer.from(text, 'utf8')` makes.
 */
/** Most digits after the point a number is written with by ByteWriter's own decimal writer. */
const MAX_FRACTION = 15
const POW10 = Array.from({ length: MAX_FRACTION + 1 }, (_, d) => 10 ** d)

/** Whether the decimal of `d` digits after the point nearest `a` reads back as `a`. */
function readsBack(a: number, d: number): boolean {
  const p = POW10[d]
  return Math.round(a * p) / p === a
}

export class ByteWriter {
  buf: Buffer
  pos = 0

  constructor(size: number) {
    // Its own memory (not a slice of Node's shared pool): it can be handed to another thread.
    this.buf = Buffer.allocUnsafeSlow(Math.max(64, size))
  }

  /** Room for `n` more bytes. */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  /** The bytes written (a view of the writer's buffer, whose memory it owns). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  /** Bytes. */
  put(b: Uint8Array): void {
    const n = b.length
    if (this.pos + n > this.buf.length) this.room(n)
    const buf = this.buf
    let p = this.pos
    // Short runs byte by byte (a call into `set` costs more than copying a few dozen bytes).
    if (n > 48) buf.set(b, p)
    else for (let i = 0; i < n; i++) buf[p + i] = b[i]
    p += n
    this.pos = p
  }

  /** One byte (an ASCII character's code). */
  byte(c: number): void {
    if (this.pos >= this.buf.length) this.room(1)
    this.buf[this.pos++] = c
  }

  /**
   * A number as `String(n)` writes it (the longest number's text, `-1.2345678901234567e-308`,
   * is 24 bytes).
   */
  num(n: number): void {
    // Not a number (a column holding another type): as adding it to a text writes it.
    if (typeof n !== 'number') return this.text('' + n)
    if (this.pos + 25 > this.buf.length) this.room(25)
    // Whole numbers digit by digit (-0 is written as 0, as String(-0) writes it): below 2^31 in
    // 32-bit integer steps, below 2^53 in floating point ones.
    if (Number.isSafeInteger(n)) {
      const buf = this.buf
      let p = this.pos
      if (n < 0) {
        buf[p++] = 45
        n = -n
      }
      if (n <= 0x7fffffff) {
        let v = n | 0
        const digits = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10
        p += digits
        this.pos = p
        for (let i = 1; i <= digits; i++) {
          const q = (v / 10) | 0
          buf[p - i] = 48 + v - q * 10
          v = q
        }
        return
      }
      let digits = 1
      for (let t = n; t >= 10; t = Math.floor(t / 10)) digits++
      p += digits
      this.pos = p
      for (let i = 1; i <= digits; i++) {
        const q = Math.floor(n / 10)
        buf[p - i] = 48 + (n - q * 10)
        n = q
      }
      return
    }
    if (!this.decimal(n)) this.ascii(String(n))
  }

  /**
   * A number that is not whole, as `String(n)` writes it, when it is a decimal of at most
   * MAX_FRACTION digits after the point (a cost, a latency): the fewest digits `d` for which
   * `k / 10^d` is `n` (k = n * 10^d rounded) are the fewest significant digits that read back as
   * `n`, which is what `String(n)` writes (ECMAScript's Number::toString), in plain decimal
   * notation for 1e-6 <= |n| < 1e21. Kept where that reasoning is exact: k below 2^50, so `n *
   * 10^d` is off by far less than a half from the k that reads back (and no other k of d digits
   * does). Then if d digits read back, so do more (the same decimal, with zeros), and the fewest
   * are found by halving. False, writing nothing, for any other number (String(n) then).
   */
  private decimal(n: number): boolean {
    const a = n < 0 ? -n : n
    if (!(a >= 1e-6 && a < 1e14)) return false
    let hi = MAX_FRACTION
    while (a * POW10[hi] >= 2 ** 50) hi--
    if (!readsBack(a, hi)) return false
    let lo = 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (readsBack(a, mid)) hi = mid
      else lo = mid + 1
    }
    const d = hi
    const p = POW10[d]
    const k = Math.round(a * p)
    // k = whole * 10^d + fraction, fraction of d digits (its last is not 0: else d - 1 would have read back).
    const whole = Math.floor(k / p)
    const fraction = k - whole * p
    if (fraction <= 0 || fraction >= p) return false
    if (n < 0) this.buf[this.pos++] = 45
    this.num(whole)
    this.room(1 + d)
    const buf = this.buf
    const pos = this.pos
    buf[pos] = 46
    let f = fraction
    for (let i = d; i >= 1; i--) {
      const q = Math.floor(f / 10)
      buf[pos + i] = 48 + (f - q * 10)
      f = q
    }
    this.pos = pos + 1 + d
    return true
  }

  /** Text known to be ASCII (a number's, a time's). */
  ascii(s: string): void {
    this.room(s.length)
    const buf = this.buf
    const p = this.pos
    const n = s.length
    for (let i = 0; i < n; i++) buf[p + i] = s.charCodeAt(i)
    this.pos = p + n
  }

  /**
   * Any text, as UTF-8 (UTF-8 takes at most three bytes per UTF-16 unit, a pair of surrogates
   * four for two). ASCII text is copied byte by byte; at the first other character the rest goes
   * through Node's encoder.
   */
  text(s: string): void {
    this.room(3 * s.length)
    const buf = this.buf
    const p = this.pos
    const n = s.length
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c >= 128) {
        this.pos = p + i + buf.write(i === 0 ? s : s.slice(i), p + i, 'utf8')
        return
      }
      buf[p + i] = c
    }
    this.pos = p + n
  }
}

/** Text as UTF-8 bytes of their own (to be copied into pages). */
export function utf8(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'utf8'))
}
