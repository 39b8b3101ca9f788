import type { Command } from 'commander'
import type { CliContext } from '../context'
import { connect } from './connect'
import { exportCommand } from './export'
import { importCommand } from './import'
import { report } from './report'
import { serve } from './serve'
import { status } from './status'

/** Adds one subcommand to the program. Its work is imported lazily inside its action. */
export type RegisterCommand = (program: Command, ctx: CliContext) => void

/** Every `burnrate` subcommand, in help order. Adding one is one file and one line here. */
export const COMMANDS: readonly RegisterCommand[] = [serve, status, report, exportCommand, importCommand, connect]
