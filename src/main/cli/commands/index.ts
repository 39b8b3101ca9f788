import { connect } from './connect'
import { exportCommand } from './export'
import { importCommand } from './import'
import { report } from './report'
import { serve } from './serve'
import { status } from './status'
import type { RegisterCommand } from './types'

export type { RegisterCommand } from './types'

/** Every `burnrate` subcommand, in help order. Adding one is one file and one line here. */
export const COMMANDS: readonly RegisterCommand[] = [serve, status, report, exportCommand, importCommand, connect]
