/** The Electron main process entry; everything Electron-specific lives in ./desktop. */
import { runDesktop } from './desktop/app'

void runDesktop()
