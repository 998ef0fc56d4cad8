import type { StreamFrame } from '../../core/frames.js'
import { publicFrame, type ProjectionRules } from '../../core/projection.js'
import { shownUserMessage, type ShownUserMessage } from '../../core/user_message.js'
import { t } from './layout.js'

/**
 * How the console reads a stored frame: through the one public projection the doors use, and,
 * beside it, what the person said (the reserved `user-message` frame the projection drops, so no
 * door ever sends it), which an operator reads as the person's. Both console views that show a
 * run's frames (the item's conversation, the run view's transcript) read through here.
 */

/** What the person said, as the console shows it: text, and each file by name and media type. */
export type Said = { t: 'said' } & ShownUserMessage

/** A frame as the console shows it: the public projection's, or what the person said. */
export type ConsoleFrame = StreamFrame | Said

/**
 * The frame as the console shows it, or `null` when it shows nothing of it: what the person said
 * as {@link Said} (never a file's URL), any other frame as {@link publicFrame} gives it.
 */
export function consoleFrame(frame: StreamFrame, rules: ProjectionRules): ConsoleFrame | null {
  const said = shownUserMessage(frame)
  if (said) return { t: 'said', ...said }
  return publicFrame(frame, rules)
}

/**
 * What the person said as HTML: labelled as theirs, each text part a paragraph, each file its
 * name and media type, in order, every value escaped and bidi-isolated (`t`). `cut` shortens a
 * long text (the conversation's rule; none by default).
 */
export function renderSaid(said: Said, cut: (text: string) => string = (text) => text): string {
  const parts = said.parts.map((part) =>
    part.type === 'text'
      ? `<p class="say" dir="auto">${t(cut(part.text))}</p>`
      : `<p class="file">File ${part.filename === null ? '(no name)' : `<code>${t(part.filename)}</code>`}, ${t(part.mediaType)}</p>`
  )
  return `<div class="said" role="group" aria-label="The person said"><p class="who">The person said:</p>${parts.join('') || '<p class="muted">(an empty message)</p>'}</div>`
}

/** How the console names a tool call's kind (`toolKind`), as a person reads it. */
const TOOL_KINDS: Record<string, string> = {
  action: 'an action: approval applies to its calls',
  read: 'a read: no approval applies to its calls',
}

/**
 * A tool call's kind as the console labels it, after the tool's name: ` (action)` or
 * ` (read)`, with its meaning as the element's title, as the runner wrote it (the AI SDK
 * runner: what the call's approval setting, `toolApproval` or `needsApproval`, decided).
 * Empty for a kind the console does not know (a writer's own value is never shown).
 */
export function toolKindLabel(kind: unknown): string {
  if (typeof kind !== 'string' || !Object.hasOwn(TOOL_KINDS, kind)) return ''
  return ` <span class="kind" title="${TOOL_KINDS[kind]}">(${kind})</span>`
}
