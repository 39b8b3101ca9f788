import { describe, expect, it } from 'vitest'
import { mp3, mp3Frame, vbrMp3, wav } from '../../../test/support/audio-files'
import { MAX_STEPS, TAIL, type Work } from './audio-containers'
import { audioSeconds } from './audio-length'

/**
 * Each format's headers built by hand as their specifications lay them out (checked against
 * ffprobe on files ffmpeg wrote: WAV PCM/ADPCM/float, MP3 CBR/Xing/MPEG-2.5, MP2, FLAC, Ogg
 * Opus/Vorbis/FLAC, M4A, WebM and MKV with and without a Duration).
 */

const u32be = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const u32le = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(n)
  return b
}

function flac(rate: number, samples: number): Buffer {
  const info = Buffer.alloc(34)
  info[10] = rate >> 12
  info[11] = (rate >> 4) & 0xff
  info[12] = ((rate & 0x0f) << 4) | 0x00 // then channels-1 and bits-1 (mono, 1 bit: zero)
  info[13] = Math.floor(samples / 2 ** 32) & 0x0f
  info.writeUInt32BE(samples % 2 ** 32, 14)
  return Buffer.concat([Buffer.from('fLaC'), Buffer.from([0x80, 0, 0, 34]), info, Buffer.alloc(1000)])
}

function oggPage(type: number, granule: bigint, serial: number, data: Buffer): Buffer {
  const h = Buffer.alloc(28)
  h.write('OggS', 0, 'latin1')
  h[5] = type
  h.writeBigInt64LE(granule, 6)
  h.writeUInt32LE(serial, 14)
  h[26] = 1
  h[27] = data.length
  return Buffer.concat([h, data])
}

function opus(seconds: number, junk = 4000): Buffer {
  const head = Buffer.concat([Buffer.from('OpusHead'), Buffer.from([1, 1]), Buffer.from([0x38, 0x01]), u32le(16000), Buffer.alloc(3)]) // pre-skip 312
  return Buffer.concat([oggPage(2, 0n, 7, head), oggPage(0, 960n, 7, Buffer.alloc(200, 0x11)), Buffer.alloc(junk, 0x22), oggPage(4, BigInt(seconds * 48000 + 312), 7, Buffer.alloc(100, 0x33))])
}

function vorbis(seconds: number, rate: number): Buffer {
  const id = Buffer.concat([Buffer.from('\x01vorbis', 'latin1'), u32le(0), Buffer.from([2]), u32le(rate), Buffer.alloc(14)])
  return Buffer.concat([oggPage(2, 0n, 9, id), Buffer.alloc(500), oggPage(4, BigInt(seconds * rate), 9, Buffer.alloc(50))])
}

const box = (type: string, ...content: Buffer[]) => {
  const body = Buffer.concat(content)
  return Buffer.concat([u32be(8 + body.length), Buffer.from(type, 'latin1'), body])
}

function m4a(scale: number, duration: number, moovLast = true, v1 = false): Buffer {
  const mvhd = v1
    ? box('mvhd', Buffer.from([1, 0, 0, 0]), Buffer.alloc(16), u32be(scale), Buffer.from(new BigUint64Array([0n]).buffer), Buffer.alloc(80))
    : box('mvhd', Buffer.alloc(4), Buffer.alloc(8), u32be(scale), u32be(duration), Buffer.alloc(80))
  if (v1) mvhd.writeBigUInt64BE(BigInt(duration), 8 + 24)
  const moov = box('moov', mvhd, box('trak', Buffer.alloc(40)))
  const parts = [box('ftyp', Buffer.from('M4A '), Buffer.alloc(4), Buffer.from('M4A isom')), box('free'), box('mdat', Buffer.alloc(5000, 0x44))]
  return Buffer.concat(moovLast ? [...parts, moov] : [parts[0], moov, ...parts.slice(1)])
}

/** An EBML element: its id (as written) and content, with a one- or eight-byte size (`unknown`: all ones, as a live recording writes). */
function ebml(id: number[], content: Buffer, unknown = false): Buffer {
  const size = unknown ? Buffer.from([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) : content.length < 127 ? Buffer.from([0x80 | content.length]) : Buffer.concat([Buffer.from([0x01, 0, 0, 0]), u32be(content.length)])
  return Buffer.concat([Buffer.from(id), size, content])
}
const EBML_HEADER = ebml([0x1a, 0x45, 0xdf, 0xa3], ebml([0x42, 0x82], Buffer.from('webm')))
const TIMECODE_SCALE = ebml([0x2a, 0xd7, 0xb1], Buffer.from([0x0f, 0x42, 0x40])) // 1 ms

function block(relative: number): Buffer {
  const b = Buffer.alloc(4 + 60, 0x55)
  b[0] = 0x81 // track 1
  b.writeInt16BE(relative, 1)
  b[3] = 0x80
  return ebml([0xa3], b)
}

function cluster(timecode: number, blocks: number[], unknown: boolean): Buffer {
  return ebml([0x1f, 0x43, 0xb6, 0x75], Buffer.concat([ebml([0xe7], u32be(timecode)), ...blocks.map(block)]), unknown)
}

function webm(durationMs: number | null): Buffer {
  const duration = durationMs === null ? Buffer.alloc(0) : ebml([0x44, 0x89], (() => {
    const d = Buffer.alloc(8)
    d.writeDoubleBE(durationMs)
    return d
  })())
  const info = ebml([0x15, 0x49, 0xa9, 0x66], Buffer.concat([TIMECODE_SCALE, duration]))
  const live = durationMs === null
  const clusters = [cluster(0, [0, 20, 40], live), cluster(30_000, [0, 20], live), cluster(60_000, [0, 20, 5_480], live)]
  return Buffer.concat([EBML_HEADER, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([info, ...clusters]), live)])
}

describe('the length of an uploaded audio file, from its headers', () => {
  it('WAV: the data at the byte rate', () => {
    expect(audioSeconds(wav(2.5))).toBe(2.5)
    expect(audioSeconds(wav(61, 8000))).toBe(61)
    // A recorder that could not go back to write the data's size: the rest of the file.
    const open = wav(4)
    open.writeUInt32LE(0xffffffff, 40)
    expect(audioSeconds(open)).toBe(4)
  })

  it('MP3: a constant bitrate over the stream (after an ID3v2 tag); the frames a Xing header counts; a VBR file without one is not known', () => {
    expect(audioSeconds(mp3(95.04))).toBeCloseTo(95.04, 9)
    const xing = mp3(2.4)
    const first = 110 // past the ID3v2 tag
    xing.write('Xing', first + 4 + 32, 'latin1')
    xing.writeUInt32BE(1, first + 4 + 36)
    xing.writeUInt32BE(5000, first + 4 + 40) // frames
    expect(audioSeconds(xing)).toBe((5000 * 1152) / 48000)
    const vbr = mp3(2.4)
    vbr[first + 3 * 384 + 2] = 0xa4 // the fourth frame at 160 kbit/s, and so 480 bytes: the next one is not where it says
    expect(audioSeconds(vbr)).toBeNull()
  })

  it('MP3 without a Xing header: constant-bitrate only when frames in eight places through the whole file have one bitrate', () => {
    // A VBR encoder's leading silence at 32 kbit/s, then speech at 256: 10 s, once read as 76.7 s.
    expect(audioSeconds(vbrMp3([20, 1], [397, 13]))).toBeNull()
    // The first hundreds of frames at one bitrate; a stretch in the middle, or only the last frames, at another.
    expect(audioSeconds(vbrMp3([300, 9], [100, 13], [300, 9]))).toBeNull()
    expect(audioSeconds(vbrMp3([600, 9], [40, 13]))).toBeNull()
    // A frame that does not read among the first ones is not the end of a constant-bitrate run.
    expect(audioSeconds(Buffer.concat([vbrMp3([3, 9]), Buffer.alloc(384), vbrMp3([200, 9])]))).toBeNull()
    // Constant bitrate at 44.1 kHz, its frames 417 or 418 bytes (padded as an encoder pads them): found again at each place.
    const frames: Buffer[] = []
    for (let n = 0, carry = 0; n < 2000; n++) {
      carry += (144 * 128_000) % 44_100
      const padded = carry >= 44_100
      if (padded) carry -= 44_100
      const frame = Buffer.alloc(417 + (padded ? 1 : 0))
      frame.set([0xff, 0xfb, 0x90 | (padded ? 0x02 : 0), 0x64])
      frames.push(frame)
    }
    expect(audioSeconds(Buffer.concat(frames))).toBeCloseTo((2000 * 1152) / 44_100, 2)
    expect(audioSeconds(vbrMp3([3, 9]))).toBeCloseTo((3 * 1152) / 48_000, 9) // fewer frames than a place's run
  })

  it('MP3: the tags a file ends with are not audio (ID3v1, APEv2, Lyrics3v2, an appended ID3v2)', () => {
    const ape = (flags: number, items: number) => {
      const b = Buffer.alloc(32)
      b.write('APETAGEX', 0, 'latin1')
      b.writeUInt32LE(2000, 8)
      b.writeUInt32LE(items + 32, 12) // the items and the footer
      b.writeUInt32LE(1, 16)
      b.writeUInt32LE(flags, 20)
      return b
    }
    const apev2 = Buffer.concat([ape(0xa0000000, 100), Buffer.alloc(100, 0x41), ape(0x80000000, 100)])
    const id3v2 = Buffer.concat([Buffer.from([0x49, 0x44, 0x33, 4, 0, 0x10, 0, 0, 0, 50]), Buffer.alloc(50, 0x42), Buffer.from([0x33, 0x44, 0x49, 4, 0, 0x10, 0, 0, 0, 50])])
    const lyrics = Buffer.from('LYRICSBEGININD0000210LYR00005hello000034LYRICS200', 'latin1')
    const id3v1 = Buffer.concat([Buffer.from('TAG', 'latin1'), Buffer.alloc(125, 0x20)])
    expect(audioSeconds(Buffer.concat([mp3(30), id3v2, apev2, id3v1]))).toBeCloseTo(30, 9)
    expect(audioSeconds(Buffer.concat([mp3(30), lyrics, id3v1]))).toBeCloseTo(30, 9)
  })

  it('a file of another format with two MPEG frame headers in its first bytes, by chance, is no MP3', () => {
    const f = Buffer.alloc(2 * 1024 * 1024)
    f.write('FORM\0\x20\0\0AIFFCOMM', 0, 'latin1')
    for (let i = 16, x = 7; i < f.length; i++) f[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24
    mp3Frame(9).copy(f, 64, 0, 4)
    mp3Frame(9).copy(f, 64 + 384, 0, 4)
    f.fill(0, 64 + 768, 64 + 772) // the third is not a frame
    expect(audioSeconds(f)).toBeNull()
  })

  it('FLAC: the STREAMINFO block', () => {
    expect(audioSeconds(flac(44100, 44100 * 75))).toBe(75)
    expect(audioSeconds(flac(16000, 16000 * 3 + 8000))).toBe(3.5)
  })

  it("Ogg: the last page's granule position, read from the end (whatever lies between)", () => {
    expect(audioSeconds(opus(37.5))).toBe(37.5)
    expect(audioSeconds(opus(600, 4 * 1024 * 1024))).toBe(600)
    expect(audioSeconds(vorbis(12, 44100))).toBe(12)
  })

  it("MP4 / M4A: the movie header's duration, its moov box first or last", () => {
    expect(audioSeconds(m4a(44100, 44100 * 20))).toBe(20)
    expect(audioSeconds(m4a(1000, 90_500, false))).toBe(90.5)
    expect(audioSeconds(m4a(48000, 48000 * 7, true, true))).toBe(7)
  })

  it('WebM: the Info Duration; without one (a live recording), the last block of the last cluster', () => {
    expect(audioSeconds(webm(65_500))).toBe(65.5)
    expect(audioSeconds(webm(null))).toBe(65.48)
  })

  it('WebM: a live recording whose last cluster holds 1,638 blocks (32.76 s of 20 ms packets, as much as a cluster can) is read whole', () => {
    const blocks = Array.from({ length: 1638 }, (_, i) => i * 20)
    const live = Buffer.concat([EBML_HEADER, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([ebml([0x15, 0x49, 0xa9, 0x66], TIMECODE_SCALE), cluster(0, [0, 20], true), cluster(60_000, blocks, true)]), true)])
    expect(audioSeconds(live)).toBe(92.74)
  })

  // Work is counted, not timed: each reader gives up (not known) past MAX_STEPS elements, boxes or
  // pages, and searches only the file's last MB, whatever the file's size.
  describe('a file built to make the reader walk costs what an ordinary one does', () => {
    const MB = 1024 * 1024

    /** The last MB a chain of 2-byte elements, with 8 unknown-size cluster ids each inside an element that skips over the next, and no cluster that reads whole. */
    function hostileWebm(size: number): Buffer {
      const f = Buffer.alloc(size, 0)
      f.set([0x1a, 0x45, 0xdf, 0xa3, 0x80], 0) // EBML header, empty
      f.set([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 5) // Segment, unknown size
      for (let i = 17; i + 1 < size; i += 2) f.set([0x80, 0x80], i) // elements of id 0x80, size 0
      const c = size - MB + 100
      for (let k = 0; k < 8; k++) f.set([0x1f, 0x43, 0xb6, 0x75, 0xff, 0x80, 0x80 | (7 * (7 - k))], c + 7 * k)
      for (let i = c + 56; i + 1 < size; i += 2) f.set([0x80, 0x80], i)
      f[size - 2] = 0
      f[size - 1] = 0
      return f
    }

    const read = (f: Buffer) => {
      const work: Work = { steps: 0, searched: 0 }
      return { seconds: audioSeconds(f, work), work }
    }

    it('WebM: candidate clusters that walk a chain of tiny elements', () => {
      const small = read(hostileWebm(4 * MB))
      const large = read(hostileWebm(16 * MB))
      expect(small.seconds).toBeNull()
      expect(small.work.steps).toBeLessThanOrEqual(MAX_STEPS)
      expect(small.work.searched).toBeLessThanOrEqual(TAIL)
      expect(large).toEqual(small)
    })

    it('WebM: a last cluster that can only be had past MAX_STEPS elements is not known', () => {
      // The blocks after 9,000 Void elements (id 0xEC, empty): a real cluster holds no such run.
      const padded = Buffer.concat([ebml([0xe7], Buffer.from([0xea, 0x60])), Buffer.alloc(2 * 9000, 0), block(5_480)])
      for (let i = 4; i < 4 + 2 * 9000; i += 2) padded.set([0xec, 0x80], i)
      const f = Buffer.concat([EBML_HEADER, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([ebml([0x15, 0x49, 0xa9, 0x66], TIMECODE_SCALE), cluster(0, [0, 20], true), ebml([0x1f, 0x43, 0xb6, 0x75], padded, true)]), true)])
      const { seconds, work } = read(f)
      expect(seconds).toBeNull()
      expect(work.steps).toBe(MAX_STEPS)
    })

    it("Ogg: no page in the file's last MB, or a last MB of page ids of another stream", () => {
      const head = opus(1).subarray(0, 28 + 19)
      const noPage = read(Buffer.concat([head, Buffer.alloc(25 * MB, 0x22)]))
      expect(noPage.seconds).toBeNull()
      expect(noPage.work.searched).toBeLessThanOrEqual(TAIL)
      expect(read(Buffer.concat([head, Buffer.alloc(4 * MB, 0x22)])).work).toEqual(noPage.work)
      const ids = read(Buffer.concat([head, Buffer.alloc(4 * MB, 'OggS')]))
      expect(ids.seconds).toBeNull()
      expect(ids.work.steps).toBeLessThanOrEqual(MAX_STEPS)
      expect(ids.work.searched).toBeLessThanOrEqual(TAIL)
      // The last page more than a MB from the end is not looked for.
      expect(audioSeconds(opus(600, 0))).toBe(600)
      expect(audioSeconds(Buffer.concat([opus(600, 0), Buffer.alloc(MB, 0x22)]))).toBeNull()
    })
  })

  it('anything else is not known', () => {
    expect(audioSeconds(Buffer.alloc(0))).toBeNull()
    expect(audioSeconds(Buffer.from('Content-Disposition: form-data; name="model"'))).toBeNull()
    expect(audioSeconds(Buffer.alloc(1024 * 1024, 0xff))).toBeNull()
    // Headers cut short.
    expect(audioSeconds(wav(3).subarray(0, 30))).toBeNull()
    expect(audioSeconds(m4a(1000, 5000).subarray(0, 5050))).toBeNull()
    expect(audioSeconds(flac(44100, 44100).subarray(0, 20))).toBeNull()
  })
})
