import type { CallRecord } from '../../ledger/record'

/**
 * Whether the other instances were told of a call's admission (./admissions.ts): `lost` once the
 * notification that carried it could not be sent (the statement failed, a row too long for one).
 */
export interface AdmissionNotice {
  lost: boolean
}

/** Each recorded call's admission, as told: read when its storing is published (a notify that fails after the call is recorded). */
const told = new WeakMap<CallRecord, AdmissionNotice>()

/** Marks a recorded call as told to the other instances as it was admitted, unless that notification was lost. */
export function markAnnounced(call: CallRecord, admission: AdmissionNotice | undefined): void {
  if (admission?.lost) return
  call.rate_announced = true
  if (admission) told.set(call, admission)
}

/**
 * Whether the other instances counted a stored call as it was admitted: else its storing counts
 * it (./publish.ts). A call whose admission notification failed, before or after it was
 * recorded, was counted by none of them.
 */
export function admissionTold(call: CallRecord): boolean {
  return call.rate_announced === true && told.get(call)?.lost !== true
}
