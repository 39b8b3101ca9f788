import { Notification, type NativeImage } from 'electron'
import type { Notice } from '../desktop-logic/notices'

/** Shows a budget notice as a desktop notification; a click opens the dashboard. */
export function showNotice(notice: Notice, onClick: () => void, icon?: NativeImage): void {
  if (!Notification.isSupported()) return
  const n = new Notification({
    title: notice.title,
    body: notice.body,
    icon,
    urgency: notice.level === 'blocking' ? 'critical' : 'normal',
  })
  n.on('click', onClick)
  n.show()
}
