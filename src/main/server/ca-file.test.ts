import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config/load'
import { readCaFile } from './ca-file'
import { StartupError } from './startup-error'

/** `upstream.ca_file` as the server reads it at start-up, on a config loaded from a real file. */

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'

/** `etc/config.yaml` naming `ca_file`, in a fresh folder; the working folder is elsewhere. */
function layout(caFile: string): { dir: string; cfg: string } {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-ca-'))
  mkdirSync(join(dir, 'etc', 'certs'), { recursive: true })
  const cfg = join(dir, 'etc', 'config.yaml')
  writeFileSync(cfg, `upstream:\n  ca_file: ${caFile}\n`)
  return { dir, cfg }
}

function startupErrorOf(cfg: string): string {
  const config = loadConfig({ config: cfg }, {})
  try {
    readCaFile(config)
  } catch (err) {
    expect(err).toBeInstanceOf(StartupError)
    return (err as Error).message
  }
  throw new Error('expected a StartupError')
}

describe('upstream.ca_file at start-up', () => {
  it("reads the certificates from the config file's folder; none set: none", () => {
    const { dir, cfg } = layout('certs/ca.pem')
    writeFileSync(join(dir, 'etc', 'certs', 'ca.pem'), PEM + PEM)
    expect(readCaFile(loadConfig({ config: cfg }, {}))).toEqual([PEM.trim(), PEM.trim()])
    writeFileSync(cfg, 'upstream: {}\n')
    expect(readCaFile(loadConfig({ config: cfg }, {}))).toBeUndefined()
  })

  it('one that is not there stops start-up, naming the config file and the path it was looked for at', () => {
    const { dir, cfg } = layout('certs/missing.pem')
    expect(startupErrorOf(cfg)).toBe(
      `config ${cfg}: upstream.ca_file: "certs/missing.pem" is ${join(dir, 'etc', 'certs', 'missing.pem')} (a relative path is taken from the config file's folder, ~/ is your home folder), which does not exist`,
    )
    writeFileSync(cfg, `upstream:\n  ca_file: ${join(dir, 'nowhere.pem')}\n`)
    expect(startupErrorOf(cfg)).toBe(`config ${cfg}: upstream.ca_file: ${join(dir, 'nowhere.pem')} does not exist`)
  })

  it('one an earlier release would have found in the working folder stops start-up, naming both places', () => {
    // The working folder holds the file under the relative name; the config's folder does not.
    const { cfg } = layout('package.json')
    const message = startupErrorOf(cfg)
    expect(message).toContain(`"package.json" is ${join(dirname(cfg), 'package.json')}`)
    expect(message).toContain(`; ${join(process.cwd(), 'package.json')} (where earlier releases took it from the working folder) is there: move it to ${join(dirname(cfg), 'package.json')}`)
  })

  it('one that cannot be read, or holds no certificate, stops start-up too', () => {
    const { dir, cfg } = layout('certs')
    expect(startupErrorOf(cfg)).toBe(`cannot read upstream.ca_file ${join(dir, 'etc', 'certs')} (EISDIR); give the path of a PEM file of CA certificates`)
    writeFileSync(join(dir, 'etc', 'certs', 'ca.pem'), 'not a certificate\n')
    writeFileSync(cfg, 'upstream:\n  ca_file: certs/ca.pem\n')
    expect(startupErrorOf(cfg)).toBe(`upstream.ca_file ${join(dir, 'etc', 'certs', 'ca.pem')} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`)
  })
})
