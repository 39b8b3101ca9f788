import { ascii, matroskaSeconds, mp4Seconds, oggSeconds, type Work } from './audio-containers'

/**
 * How long an uploaded audio file plays, in seconds, read from its headers: what a transcription
 * is billed by when its answer does not say (Groq's whisper answered as `json` or `text`, and any
 * whisper answered as `text`, `srt` or `vtt`). The formats the transcription APIs take: WAV, MP3
 * (MPEG audio), FLAC, Ogg (Opus, Vorbis, FLAC), MP4/M4A and WebM/Matroska. Null for anything
 * else, or when the headers do not say (a VBR MP3 without a Xing or VBRI header, an MP4 written in
 * fragments, a WebM whose last cluster cannot be found in its last MB).
 *
 * Bounded whatever the file's size and content: each reader looks at fixed headers, the file's
 * last MB (an Ogg file's last page, a WebM file's last cluster) and a few thousand boxes, elements
 * or pages at most (`work` counts them: ./audio-containers.ts), and an MP3 without a Xing header at
 * a few frames in eight places through it; no frame or page is walked through the file. The file
 * is a view of the request body already held, never a copy.
 */
export function audioSeconds(file: Buffer, work: Work = { steps: 0, searched: 0 }): number | null {
  let seconds: number | null = null
  try {
    seconds = read(file, work)
  } catch {
    // A header cut short or lying about its sizes (RangeError from a read past the end): not known.
  }
  return seconds !== null && Number.isFinite(seconds) && seconds > 0 && seconds < MAX_SECONDS ? seconds : null
}

/** Longer than any file a transcription API takes (a day): a header that says more is not believed. */
const MAX_SECONDS = 86_400

function read(f: Buffer, w: Work): number | null {
  if (f.length < 12) return null
  if (ascii(f, 0, 4) === 'RIFF' && ascii(f, 8, 4) === 'WAVE') return wavSeconds(f)
  if (ascii(f, 0, 4) === 'OggS') return oggSeconds(f, w)
  if (ascii(f, 4, 4) === 'ftyp') return mp4Seconds(f, w)
  if (f.readUInt32BE(0) === 0x1a45dfa3) return matroskaSeconds(f, w)
  // FLAC and MP3 may begin with an ID3v2 tag.
  const start = skipId3v2(f)
  if (ascii(f, start, 4) === 'fLaC') return flacSeconds(f, start + 4)
  return mpegSeconds(f, start)
}

/** RIFF WAVE: the `data` chunk's bytes at the `fmt ` chunk's byte rate (or the `fact` chunk's sample count, for a compressed one). */
function wavSeconds(f: Buffer): number | null {
  let byteRate = 0
  let sampleRate = 0
  let samples = 0
  let data = -1
  for (let at = 12, n = 0; at + 8 <= f.length && n < 64; n++) {
    const id = ascii(f, at, 4)
    const size = f.readUInt32LE(at + 4)
    if (id === 'fmt ') {
      sampleRate = f.readUInt32LE(at + 12)
      byteRate = f.readUInt32LE(at + 16)
    } else if (id === 'fact' && size >= 4) {
      samples = f.readUInt32LE(at + 8)
    } else if (id === 'data') {
      // A recorder that could not seek back writes 0 or 0xFFFFFFFF: the rest of the file is the data.
      data = size === 0 || size === 0xffffffff || at + 8 + size > f.length ? f.length - at - 8 : size
    }
    if (byteRate > 0 && data >= 0) break
    at += 8 + size + (size & 1)
  }
  if (samples > 0 && sampleRate > 0) return samples / sampleRate
  return byteRate > 0 && data > 0 ? data / byteRate : null
}

/** FLAC: STREAMINFO (always the first metadata block) gives the sample rate and the total samples. */
function flacSeconds(f: Buffer, at: number): number | null {
  if ((f[at] & 0x7f) !== 0) return null
  const info = at + 4
  const rate = (f[info + 10] << 12) | (f[info + 11] << 4) | (f[info + 12] >> 4)
  const total = (f[info + 13] & 0x0f) * 2 ** 32 + f.readUInt32BE(info + 14)
  return rate > 0 && total > 0 ? total / rate : null
}

/** Past any ID3v2 tags at the start (their size is in the header, syncsafe). */
function skipId3v2(f: Buffer): number {
  let at = 0
  for (let n = 0; n < 4 && ascii(f, at, 3) === 'ID3' && at + 10 <= f.length; n++) {
    at += 10 + syncsafe(f, at + 6) + (f[at + 5] & 0x10 ? 10 : 0)
  }
  return at
}

/** An ID3v2 size: four bytes of seven bits each. */
function syncsafe(f: Buffer, at: number): number {
  return (f[at] << 21) | (f[at + 1] << 14) | (f[at + 2] << 7) | f[at + 3]
}

// MPEG audio frame headers (ISO 11172-3, 13818-3), kbit/s by version and layer.
const BITRATES_V1 = [
  [], // (layer 0 is reserved)
  [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320], // layer III
  [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384], // layer II
  [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448], // layer I
]
const BITRATES_V2 = [[], [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]]
const RATES = [[11025, 12000, 8000], [], [22050, 24000, 16000], [44100, 48000, 32000]] // by version bits: 2.5, -, 2, 1

interface Frame {
  v1: boolean
  layer: number
  bitrate: number
  rate: number
  samples: number
  length: number
  mono: boolean
}

function frameAt(f: Buffer, at: number): Frame | null {
  if (at + 4 > f.length || f[at] !== 0xff || (f[at + 1] & 0xe0) !== 0xe0) return null
  const version = (f[at + 1] >> 3) & 3
  const layer = (f[at + 1] >> 1) & 3
  const index = f[at + 2] >> 4
  const rate = RATES[version][(f[at + 2] >> 2) & 3]
  if (version === 1 || layer === 0 || index === 0 || index === 15 || !rate) return null
  const v1 = version === 3
  const bitrate = (v1 ? BITRATES_V1 : BITRATES_V2)[layer][index] * 1000
  const samples = layer === 3 ? 384 : layer === 1 && !v1 ? 576 : 1152
  const padding = (f[at + 2] >> 1) & 1
  const length = layer === 3 ? (Math.floor((12 * bitrate) / rate) + padding) * 4 : Math.floor((samples / 8) * bitrate / rate) + padding
  return { v1, layer, bitrate, rate, samples, length, mono: f[at + 3] >> 6 === 3 }
}

/** How far past the tags the first frame is looked for. */
const SYNC_WINDOW = 64 * 1024
/** Places, spread from the first frame to the last, whose frames must all have the first frame's bitrate for a file without a Xing or VBRI header to be taken as constant-bitrate. */
const CBR_PLACES = 8
/** Frames that must follow one another at each place (fewer where the stream ends). */
const CBR_FRAMES = 4
/** How far past a place the next frame is looked for: more than the longest frame (2,881 bytes, Layer II at 160 kbit/s and 8 kHz). */
const RESYNC_WINDOW = 4096

/**
 * MPEG audio (MP3): the frame count a Xing/Info or VBRI header gives, else, when the frames at
 * eight places spread over the whole stream all have the first frame's bitrate, the stream's bytes
 * (less the tags at the end) at that bitrate. A VBR file without either header is not known (its
 * length is only had by walking every frame): a VBR encoder's first frames are often its leading
 * silence at its lowest bitrate, which taken as the whole file's would bill it several times over.
 * A place where no run of frames like the first is found (a file of another format, with two
 * frame headers in its first bytes by chance) is not an MP3's either: not known.
 */
function mpegSeconds(f: Buffer, start: number): number | null {
  let at = start
  let first: Frame | null = null
  for (const end = Math.min(f.length, start + SYNC_WINDOW); at < end; at++) {
    at = f.indexOf(0xff, at)
    if (at === -1 || at >= end) return null
    first = frameAt(f, at)
    // A frame is believed when the next one follows it where its length says.
    const next = first && frameAt(f, at + first.length)
    if (first && next && next.rate === first.rate && next.layer === first.layer) break
    first = null
  }
  if (!first) return null
  const side = first.layer === 1 ? (first.v1 ? (first.mono ? 17 : 32) : first.mono ? 9 : 17) : 0
  const xing = at + 4 + side
  const tag = ascii(f, xing, 4)
  if ((tag === 'Xing' || tag === 'Info') && f.readUInt32BE(xing + 4) & 1) return (f.readUInt32BE(xing + 8) * first.samples) / first.rate
  if (ascii(f, at + 36, 4) === 'VBRI') return (f.readUInt32BE(at + 36 + 14) * first.samples) / first.rate
  const end = audioEnd(f, at)
  // The last place leaves room for its run of frames before the end.
  const span = Math.max(0, end - at - (CBR_FRAMES + 1) * (first.length + 1))
  // The first place is the first frame's: the frames after it must read, with no resync.
  if (runAt(f, at, first, end) !== true) return null
  for (let k = 1; k < CBR_PLACES; k++) {
    if (!sameBitrateAt(f, at + Math.floor((span * k) / (CBR_PLACES - 1)), first, end)) return null
  }
  return ((end - at) * 8) / first.bitrate
}

/** Whether the first run of frames like `first` found within RESYNC_WINDOW of `place` all have its bitrate; false when no run is found. */
function sameBitrateAt(f: Buffer, place: number, first: Frame, end: number): boolean {
  for (let at = place, limit = Math.min(place + RESYNC_WINDOW, end); at < limit; at++) {
    at = f.indexOf(0xff, at)
    if (at === -1 || at >= limit) return false
    const same = runAt(f, at, first, end)
    if (same !== null) return same
  }
  return false
}

/**
 * Whether CBR_FRAMES frames follow one another from `at`, each of `first`'s version, layer and
 * rate (fewer where the stream ends): null when they do not (no frame starts at `at`, only bytes
 * that look like one), else whether all have `first`'s bitrate.
 */
function runAt(f: Buffer, at: number, first: Frame, end: number): boolean | null {
  let same = true
  for (let n = 0, p = at; n < CBR_FRAMES && p < end; n++) {
    const frame = frameAt(f, p)
    if (!frame || frame.v1 !== first.v1 || frame.layer !== first.layer || frame.rate !== first.rate) return null
    same &&= frame.bitrate === first.bitrate
    p += frame.length
  }
  return same
}

/** Where an MP3's audio ends: before the tags it may end with (ID3v1, APEv2, Lyrics3v2, an ID3v2 tag appended with its footer), in any order. */
function audioEnd(f: Buffer, from: number): number {
  let end = f.length
  for (let n = 0; n < 4; n++) {
    let size = 0
    if (ascii(f, end - 128, 3) === 'TAG') size = 128
    else if (ascii(f, end - 32, 8) === 'APETAGEX') size = f.readUInt32LE(end - 20) + (f.readUInt32LE(end - 12) & 0x80000000 ? 32 : 0) // its size leaves out its header, if it has one
    else if (ascii(f, end - 10, 3) === '3DI') size = 20 + syncsafe(f, end - 4)
    else if (ascii(f, end - 9, 9) === 'LYRICS200') size = 15 + Number(ascii(f, end - 15, 6))
    if (!(size > 0) || end - size < from) break
    end -= size
  }
  return end
}
