import type { ToolApprovalConfiguration, ToolSet } from 'ai'

/**
 * The AI SDK 7's call-level approval setting (`streamText` / `ToolLoopAgent`'s `toolApproval`):
 * either one function asked for every call, or per tool a status (`'not-applicable'`,
 * `'approved'`, `'denied'`, `'user-approval'`, or `{ type, reason }`) or a function of the
 * call's input returning one. It takes precedence over the tools' own (deprecated)
 * `needsApproval`; a tool it does not name falls back to that.
 */
export type ToolApprovalSetting = ToolApprovalConfiguration<ToolSet, never>

/** A tool's kind as the frames label it (`toolKind`): does it act, or only read? */
export type ToolKind = 'read' | 'action'

/**
 * A tool's kind before any call of it is resolved (PURE): what the `tool-input-start` frame
 * says (its input is still streaming), and what a takeover writes for a call whose own record
 * is missing. `'action'` when the approval setting may ask for it: a per-tool entry that is not
 * `'not-applicable'` (a status, or a function that may ask), a generic function (it may ask
 * for any call), or, for a tool the setting does not name, a `needsApproval` that is set (a
 * function of the input included). `'read'` otherwise. A call's own kind, once the SDK has
 * resolved it, is {@link callToolKind}'s.
 */
export function staticToolKind(
  name: string,
  tools: ToolSet,
  toolApproval: ToolApprovalSetting | undefined
): ToolKind {
  if (typeof toolApproval === 'function') return 'action'
  const entry =
    toolApproval && Object.hasOwn(toolApproval, name)
      ? (toolApproval as Record<string, unknown>)[name]
      : undefined
  if (entry !== undefined && entry !== null) {
    const type = typeof entry === 'object' ? (entry as { type?: unknown }).type : entry
    return type === 'not-applicable' ? 'read' : 'action'
  }
  const tool = Object.hasOwn(tools, name) ? tools[name] : undefined
  return tool?.needsApproval ? 'action' : 'read'
}

/**
 * A resolved call's kind (PURE), as the SDK decided it: the SDK resolves a call's approval
 * (`toolApproval`, else `needsApproval`) as soon as the call is complete and, unless the
 * answer is `'not-applicable'`, emits a `tool-approval-request` right after the `tool-call`
 * (for a person, or automatic for `'approved'` / `'denied'`). So a call followed by its
 * approval request is an `'action'`, any other a `'read'`: the label follows the SDK's own
 * decision, per call, whichever API made it, without asking the app's functions twice.
 */
export const callToolKind = (asked: boolean): ToolKind => (asked ? 'action' : 'read')
