import { existsSync, readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import type { Config } from '../config/schema'
import { StartupError } from './startup-error'

/**
 * The PEM certificates in `upstream.ca_file`, read when the server starts (the config's loading
 * only takes the path from the config file's folder, so commands that make no call out work
 * without the file). A file that is not there, cannot be read or holds no certificate stops
 * start-up: started without it, every call to a provider behind the private CA would fail.
 */
export function readCaFile(config: Pick<Config, 'upstream' | 'source' | 'ca_file_as_written'>): string[] | undefined {
  const file = config.upstream.ca_file
  if (!file) return undefined
  if (!existsSync(file)) throw new StartupError(caFileMissing(file, config.ca_file_as_written ?? file, config.source))
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new StartupError(`cannot read upstream.ca_file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'}); give the path of a PEM file of CA certificates`)
  }
  const certs = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)
  if (!certs) throw new StartupError(`upstream.ca_file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`)
  return certs
}

/**
 * Names where a missing `ca_file` was looked for, and the config file that names it. Earlier
 * releases took a relative one from the working folder: when it is there, the message says so.
 */
function caFileMissing(path: string, given: string, source: string | null): string {
  const before = resolve(given)
  const earlier = !isAbsolute(given) && before !== path && existsSync(before) ? `; ${before} (where earlier releases took it from the working folder) is there: move it to ${path}, or set ca_file to its absolute path` : ''
  const what = given === path ? path : `"${given}" is ${path} (a relative path is taken from the config file's folder, ~/ is your home folder), which`
  return `${source ? `config ${source}: ` : ''}upstream.ca_file: ${what} does not exist${earlier}`
}
