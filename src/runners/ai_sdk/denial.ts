/**
 * What the model is told about a call that did not run, per status: the reason a person gave,
 * or a fixed sentence. Used when the denial is first given to the model (the resume's
 * `tool-approval-response`, which the AI SDK turns into an `execution-denied` tool result) and
 * when the conversation is rebuilt from stored frames later, so the model sees the same words.
 */
export const DENIAL_SENTENCES = {
  rejected: 'A person rejected this tool call; it did not run.',
  expired: 'Nobody approved this tool call in time; it did not run.',
  cancelled: 'The run was cancelled before this tool call ran.',
} as const

export type DenialStatus = keyof typeof DENIAL_SENTENCES

export function denialReason(status: string | undefined, reason?: string | null): string {
  if (reason) return reason
  return DENIAL_SENTENCES[(status as DenialStatus) ?? 'rejected'] ?? DENIAL_SENTENCES.rejected
}
