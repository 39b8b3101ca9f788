/**
 * Small real audio files, made in the test rather than shipped: a transcription's upload whose
 * length Burnrate reads from its headers (src/main/metering/audio-length.ts).
 */

/** A 16-bit mono PCM WAV of `seconds`: a second of a 440 Hz tone, then silence. */
export function wav(seconds: number, rate = 16_000): Buffer {
  const samples = Math.round(seconds * rate)
  const f = Buffer.alloc(44 + samples * 2)
  f.write('RIFF', 0, 'latin1')
  f.writeUInt32LE(36 + samples * 2, 4)
  f.write('WAVEfmt ', 8, 'latin1')
  f.writeUInt32LE(16, 16)
  f.writeUInt16LE(1, 20) // PCM
  f.writeUInt16LE(1, 22) // mono
  f.writeUInt32LE(rate, 24)
  f.writeUInt32LE(rate * 2, 28) // byte rate
  f.writeUInt16LE(2, 32) // block align
  f.writeUInt16LE(16, 34)
  f.write('data', 36, 'latin1')
  f.writeUInt32LE(samples * 2, 40)
  for (let i = 0; i < Math.min(samples, rate); i++) f.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2)
  return f
}

/**
 * A constant-bitrate MP3 (MPEG-1 Layer III, 128 kbit/s, 48 kHz, no Xing header) of `seconds`:
 * frames of 1,152 samples, 384 bytes each, whose side information and main data are zero (silence).
 * An ID3v2 tag before them, as encoders write one.
 */
export function mp3(seconds: number): Buffer {
  const frames = Math.round((seconds * 48_000) / 1152)
  const id3 = Buffer.alloc(10 + 100)
  id3.write('ID3', 0, 'latin1')
  id3[3] = 4
  id3[9] = 100 // the tag's size, syncsafe
  const frame = Buffer.alloc(384)
  frame.set([0xff, 0xfb, 0x94, 0x64]) // sync, MPEG-1 Layer III without CRC; 128 kbit/s, 48 kHz; joint stereo
  return Buffer.concat([id3, ...Array.from({ length: frames }, () => frame)])
}

/** One MPEG-1 Layer III frame at 48 kHz (joint stereo, no CRC) of bitrate `index` (9: 128 kbit/s, 1: 32, 13: 256), its data zero. */
export function mp3Frame(index: number): Buffer {
  const kbps = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320][index]
  const f = Buffer.alloc(Math.floor((144 * kbps * 1000) / 48_000))
  f.set([0xff, 0xfb, (index << 4) | 0x04, 0x64])
  return f
}

/**
 * A VBR MP3 without a Xing or VBRI header, as `[frames, bitrate index]` runs: a VBR encoder
 * writes its leading silence at its lowest bitrate (32 kbit/s), then the speech at higher ones.
 */
export function vbrMp3(...runs: [number, number][]): Buffer {
  return Buffer.concat(runs.flatMap(([frames, index]) => Array.from({ length: frames }, () => mp3Frame(index))))
}
