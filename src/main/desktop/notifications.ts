import { Notification, type NativeImage } from 'electron'
import type { Notice } from '../desktop-logic/notices'

/** Shown notifications, held so they are not garbage-collected before a click arrives. */
const live = new Set<Notification>()

/** Shows a notice (budget, plan window, runaway agent) as a desktop notification; a click opens the dashboard. */
export function showNotice(notice: Notice, onClick: () => void, icon?: NativeImage): void {
  if (!Notification.isSupported()) return
  const n = new Notification({
    title: notice.title,
    body: notice.body,
    icon,
    urgency: notice.level === 'blocking' ? 'critical' : 'normal',
  })
  live.add(n)
  n.on('click', () => {
    live.delete(n)
    onClick()
  })
  n.on('close', () => live.delete(n))
  n.show()
}
