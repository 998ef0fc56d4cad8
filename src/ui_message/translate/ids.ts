/**
 * The ids the UI message stream door mints, derived from stored positions only (so one part has
 * one id live, on replay, on every replica, after a restart):
 * - a text part: `text-<seq>`, a reasoning part: `reasoning-<seq>`, `seq` being the row that
 *   opened it;
 * - an approval: `approval-<seq>`, `seq` being the row of the `approval` frame that parked (the
 *   client's `addToolApprovalResponse` sends it back; the door reads that row to find the item);
 * - the assistant message of a turn: the stream's run id.
 * Tool call ids are the agent's own (the frames' `id`).
 */

export const textPartId = (seq: number) => `text-${seq}`
export const reasoningPartId = (seq: number) => `reasoning-${seq}`
export const approvalId = (seq: number) => `approval-${seq}`

const APPROVAL = /^approval-([1-9][0-9]{0,14})$/

/** The row an approval id names, or `null` for a string the door did not mint. */
export function approvalSeq(id: unknown): number | null {
  if (typeof id !== 'string') return null
  const match = APPROVAL.exec(id)
  return match ? Number(match[1]) : null
}
