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

/**
 * The same, while agents point at Burnrate: they cannot work until it runs, so the dialog offers
 * to put their settings back. True when the person chose to.
 */
export async function askStartupErrorDisconnect(message: string, agents: string[]): Promise<boolean> {
  const { response } = await dialog.showMessageBox({
    type: 'error',
    title: 'Burnrate',
    message: 'Burnrate cannot start',
    detail:
      `${message}\n\n${agents.join(', ')} ${agents.length === 1 ? 'points' : 'point'} at Burnrate and cannot reach ${agents.length === 1 ? 'its' : 'their'} provider while it is stopped. ` +
      'Disconnect puts their settings back as they were (connect them again once Burnrate starts).',
    buttons: ['Disconnect agents and quit', 'Quit'],
    defaultId: 0,
    cancelId: 1,
    noLink: true,
  })
  return response === 0
}

/** Shows exactly what a connect or disconnect will change; true when the person confirms. */
export async function confirmChange(text: { message: string; detail: string; button: string }): Promise<boolean> {
  const { response } = await dialog.showMessageBox({
    type: 'question',
    title: 'Burnrate',
    message: text.message,
    detail: text.detail,
    buttons: [text.button, 'Cancel'],
    defaultId: 0,
    cancelId: 1,
    noLink: true,
  })
  return response === 0
}

/** A connect or disconnect that could not be done (a read-only or malformed file): nothing was written. */
export function showProblem(message: string): void {
  void dialog.showMessageBox({ type: 'warning', title: 'Burnrate', message: 'Nothing was changed', detail: message, buttons: ['OK'], noLink: true })
}

/** Asks on quit what happens to the agents that point at Burnrate; the index of the chosen button. */
export async function askOnQuit(q: { message: string; detail: string; buttons: string[] }): Promise<number> {
  const { response } = await dialog.showMessageBox({
    type: 'warning',
    title: 'Burnrate',
    message: q.message,
    detail: q.detail,
    buttons: q.buttons,
    defaultId: 0,
    cancelId: q.buttons.length - 1,
    noLink: true,
  })
  return response
}
