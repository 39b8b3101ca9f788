import { dialog } from 'electron'

/** Another program holds the configured port: offer `suggested` instead. True when accepted. */
export async function askOtherPort(taken: number, suggested: number, detail: string, configHint: string): Promise<boolean> {
  const other = suggested ? `port ${suggested}` : 'another free port'
  const { response } = await dialog.showMessageBox({
    type: 'warning',
    title: 'Burnrate',
    message: `Port ${taken} is in use by another program`,
    detail:
      `${detail ? detail[0].toUpperCase() + detail.slice(1) + '. ' : ''}` +
      `Burnrate can run on ${other} instead for now; agents must then point at that port ("Copy agent setup" in the tray gives the lines). ` +
      `To choose a port for good, set server.port in ${configHint}.`,
    buttons: [suggested ? `Use port ${suggested}` : 'Use another port', 'Quit'],
    defaultId: 0,
    cancelId: 1,
    noLink: true,
  })
  return response === 0
}

/** A problem that stops start-up (bad config, cannot listen): said in a dialog, since there is no terminal. */
export function showStartupError(message: string): void {
  dialog.showErrorBox('Burnrate cannot start', message)
}
