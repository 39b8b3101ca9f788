import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { Option } from 'commander'
import type { RegisterCommand } from './types'
import { CliError } from '../context'
import { writePrivateFile } from '../private-file'
import { stdoutSink } from '../stdout-sink'
import { connectionFailure, getJson, openLocalLedger, pathOption, prepareLocal, resolveTarget, tenantOption, withTarget } from '../target'
import { FIRST_TIME } from '../../report/window'
import { cliWindow } from '../window'

/** `burnrate export`: every call of a window, as the dashboard's export gives it (CSV or JSON). */
export const exportCommand: RegisterCommand = (program, ctx) => {
  withTarget(
    program
      .command('export')
      .description('Every call of a window, oldest first, as CSV or JSON (the dashboard export\'s fields).')
      .addOption(new Option('--format <format>', 'output format').choices(['csv', 'json']).default('csv'))
      .option('--since <day>', 'from this day (YYYY-MM-DD) or ISO time (default: the beginning)')
      .option('--until <day>', 'up to and including this day, or up to this ISO time')
      .option('--tenant <id>', "only this tenant's calls", tenantOption)
      .option('-o, --output <file>', 'write to this file instead of stdout', pathOption),
  ).action(async (o) => {
    const t = await resolveTarget(o, ctx)
    const tz = t.config.timezone
    // Before a file is made (-o) or anything is read.
    const when = cliWindow(o, tz)
    // A file is always private to the user: the export holds every call (tenants, sessions, key hints).
    if (o.output) return writePrivateFile(o.output, (sink) => exportTo(sink))
    // Chunks go out as bytes: the server's answer arrives cut wherever the network cut it, often
    // inside a character (a CJK session, an emoji agent), and decoding each alone printed U+FFFD.
    // A stdout that asks to wait (a slow pipe) is waited for, and one whose reader left ends it.
    return exportTo(stdoutSink(ctx.stdout))

    async function exportTo(sink: NodeJS.WritableStream): Promise<void> {
      if (t.kind === 'http') {
        // No --since: the whole ledger (the API's export without one is the last 30 days; this
        // start is none to it), calls stamped before 1970 too, as --local exports them.
        const p = new URLSearchParams({ format: o.format, since: o.since ?? new Date(FIRST_TIME).toISOString() })
        if (o.until) p.set('until', o.until)
        if (o.tenant) p.set('tenant', o.tenant)
        const r = await t.get(`/api/dashboard/export?${p}`, { stream: true })
        if (!r.ok || !r.body) {
          await getJson(t, `/api/dashboard/export?${p}`)
          throw new CliError(`${t.url} has no export API (its dashboard is off); run with --local`)
        }
        // The API's JSON ends at its closing brace; a file or terminal gets the last line break
        // the ledger file's export writes, so the two print the same bytes.
        const end = o.format === 'json' ? [Buffer.from('\n')] : []
        const body = r.body as unknown as AsyncIterable<Uint8Array>
        let cut: unknown = null
        try {
          await pipeline(Readable.from((async function* () {
            try {
              yield* body
            } catch (err) {
              cut = err
              throw err
            }
            yield* end
          })()), sink)
        } catch (err) {
          // The server ended the transfer (fetch says only 'terminated'): it stopped, or it ended an
          // export whose reader took nothing for a while (a pager left on its first screen). A
          // failure to write (`| head` gone, a full disk) is stdout's, and said as such.
          if (cut === null || err !== cut) throw err
          throw new CliError(
            `the export from ${t.url} ended before its last byte (${connectionFailure(cut)}), so the output is incomplete; a Burnrate ends an export whose reader takes none of it for dashboard.export_stall_ms (a minute by default): write it with -o and read the file`,
          )
        }
        return
      }
      await prepareLocal()
      const { ExportFormatter } = await import('../../dashboard/export-format')
      const { OPEN_END, OPEN_START, SqlitePager, firstKeyset, storePage } = await import('../../dashboard/export-query')
      const { atExportMoment } = await import('../../dashboard/export-moment')
      const ledger = await openLocalLedger(t)
      try {
        // The calls in the ledger now: a server writing beside this export adds none to it (on
        // PostgreSQL every page is read in one read-only transaction, held until the file is written).
        await atExportMoment(ledger.store, async (store, asOf) => {
          const window = {
            start: when.since ?? OPEN_START,
            end: when.until ?? OPEN_END,
            tenant: (o.tenant as string | undefined) ?? null,
            member: null,
            asOf,
          }
          // Keyset pages (no statement stays open, so a running server keeps writing), each one string.
          const PAGE = 5000
          const format = o.format === 'csv' ? 'csv' : 'json'
          const sqlite = ledger.store.dialect === 'sqlite' ? new SqlitePager(ledger.db, window, PAGE) : null
          const text = new ExportFormatter(format)
          async function* pages() {
            yield text.head()
            let keyset = firstKeyset(window)
            for (;;) {
              const got = sqlite ? sqlite.page(text, keyset) : await storePage(store, text, window, keyset, PAGE)
              if (got.keyset !== null) {
                keyset = got.keyset
                yield got.text
              }
              if (got.rows < PAGE) break
            }
            // A file or terminal gets a last line break after the JSON (as through a server, above).
            yield text.tail() + (text.format === 'json' ? '\n' : '')
          }
          await pipeline(Readable.from(pages()), sink)
        })
      } finally {
        await ledger.close()
      }
    }
  })
}

