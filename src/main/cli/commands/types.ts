import type { Command } from 'commander'
import type { CliContext } from '../context'

/** Adds one subcommand to the program. Its work is imported lazily inside its action. */
export type RegisterCommand = (program: Command, ctx: CliContext) => void
