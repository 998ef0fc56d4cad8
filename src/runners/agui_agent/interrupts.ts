import type { Interrupt, ResumeEntry } from '@ag-ui/core'
import type { ElicitationQuestion, StreamFrame, ToolConfirmation } from '../../core/frames.js'
import type { SettledItem } from '../../parking/types.js'
import { parseArgs, type StreamedCall } from './events.js'

/**
 * An agent's interrupts as parked items and a person's decisions as its `resume[]` (PURE).
 *
 * - An interrupt that names a tool call (`toolCallId`) parks an `approval` under the call's id
 *   (the call's name and arguments as streamed).
 * - Any other parks an `elicitation` under the interrupt's id: a question per property of its
 *   `responseSchema` when that is an object of strings, string enums, booleans or arrays of
 *   string enums; otherwise one free-text question (`answer`).
 */

/** How approvals are asked (the `approval` frame's fields). */
export interface ApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: { toolName: string; input: unknown }) => string)
  /** Display copy. Default: `{ title: <the interrupt's message> }`, else `Run <toolName>?`. */
  confirmation?: (call: {
    toolName: string
    input: unknown
    interrupt: Interrupt
  }) => ToolConfirmation
}

/** What a parked interrupt became: the item id it is decided under and how its reply maps back. */
export interface ParkedInterrupt {
  interrupt: Interrupt
  itemId: string
  kind: 'approval' | 'elicitation'
  /** Approvals: the call's arguments as asked (an edit is sent back as `editedArgs`). */
  input?: unknown
  /** Elicitations: how each question's values become the payload (`free`: one text). */
  shape?: 'free' | Record<string, 'string' | 'boolean' | 'array'>
}

/** The free-text question's id. */
export const ANSWER_QUESTION = 'answer'

type Schema = Record<string, any>

/** The questions a `responseSchema` asks, and how answers map to its properties, or `null`. */
function questionsOf(schema: unknown): {
  questions: ElicitationQuestion[]
  shape: Record<string, 'string' | 'boolean' | 'array'>
} | null {
  if (!schema || typeof schema !== 'object') return null
  const s = schema as Schema
  if (s.type !== 'object' || !s.properties || typeof s.properties !== 'object') return null
  const questions: ElicitationQuestion[] = []
  const shape: Record<string, 'string' | 'boolean' | 'array'> = {}
  for (const [id, raw] of Object.entries(s.properties as Record<string, Schema>)) {
    if (!raw || typeof raw !== 'object') return null
    const prompt = String(raw.title ?? raw.description ?? id)
    const enumOf = (values: unknown) =>
      Array.isArray(values) && values.every((v) => typeof v === 'string')
        ? (values as string[])
        : null
    if (raw.type === 'boolean') {
      shape[id] = 'boolean'
      questions.push({
        id,
        prompt,
        options: [
          { value: 'true', label: 'Yes' },
          { value: 'false', label: 'No' },
        ],
      })
    } else if (raw.type === 'string') {
      shape[id] = 'string'
      const values = enumOf(raw.enum)
      questions.push({
        id,
        prompt,
        options: (values ?? []).map((value) => ({ value, label: value })),
        ...(values ? {} : { allowFreeText: true }),
      })
    } else if (raw.type === 'array' && enumOf(raw.items?.enum)) {
      shape[id] = 'array'
      questions.push({
        id,
        prompt,
        multiple: true,
        options: enumOf(raw.items.enum)!.map((value) => ({ value, label: value })),
      })
    } else {
      return null
    }
  }
  return questions.length > 0 ? { questions, shape } : null
}

/**
 * The frames an interrupt outcome writes (one per interrupt) and what each became. `calls` are
 * the tool calls streamed so far (this segment's, then the stored ones).
 */
export function parkInterrupts(
  runId: string,
  interrupts: Interrupt[],
  calls: Map<string, StreamedCall>,
  options: ApprovalOptions = {},
  now = Date.now()
): { frames: StreamFrame[]; parked: ParkedInterrupt[] } {
  const frames: StreamFrame[] = []
  const parked: ParkedInterrupt[] = []
  for (const interrupt of interrupts) {
    const expiresAt =
      typeof interrupt.expiresAt === 'string' && !Number.isNaN(Date.parse(interrupt.expiresAt))
        ? new Date(Math.max(Date.parse(interrupt.expiresAt), now)).toISOString()
        : undefined
    if (interrupt.toolCallId) {
      const call = calls.get(interrupt.toolCallId)
      const toolName = call?.name || 'tool'
      const input = call ? parseArgs(call.args) : {}
      const approver = options.approver
      frames.push({
        t: 'approval',
        runId,
        id: interrupt.toolCallId,
        toolName,
        input,
        confirmation: options.confirmation?.({ toolName, input, interrupt }) ?? {
          title: interrupt.message ?? `Run ${toolName}?`,
        },
        approver:
          typeof approver === 'function'
            ? approver({ toolName, input })
            : (approver ?? 'requester'),
        ...(expiresAt ? { expiresAt } : {}),
      })
      parked.push({ interrupt, itemId: interrupt.toolCallId, kind: 'approval', input })
      continue
    }
    const asked = questionsOf(interrupt.responseSchema)
    frames.push({
      t: 'elicitation',
      runId,
      id: interrupt.id,
      request: {
        id: interrupt.id,
        source: 'ask',
        ...(interrupt.message ? { preamble: interrupt.message } : {}),
        questions: asked?.questions ?? [
          {
            id: ANSWER_QUESTION,
            prompt: interrupt.message ?? 'Your answer',
            options: [],
            allowFreeText: true,
          },
        ],
      },
    })
    parked.push({
      interrupt,
      itemId: interrupt.id,
      kind: 'elicitation',
      shape: asked?.shape ?? 'free',
    })
  }
  return { frames, parked }
}

/** A question set's answers as the payload its interrupt's schema describes. */
function answersPayload(item: SettledItem, shape: ParkedInterrupt['shape']): unknown {
  const answers = item.answers ?? {}
  if (shape === 'free' || shape === undefined) {
    const text = answers[ANSWER_QUESTION]?.[0] ?? ''
    try {
      const parsed = JSON.parse(text)
      return parsed !== null && typeof parsed === 'object' ? parsed : text
    } catch {
      return text
    }
  }
  const payload: Record<string, unknown> = {}
  for (const [id, kind] of Object.entries(shape)) {
    const values = answers[id]
    if (!values || values.length === 0) continue
    payload[id] = kind === 'array' ? values : kind === 'boolean' ? values[0] === 'true' : values[0]
  }
  return payload
}

/**
 * The `resume[]` entries of the settled items, one per parked interrupt (AG-UI 1.0: every open
 * interrupt is answered). An approval: `resolved` with `{ approved: true }` (plus `editedArgs`
 * when a person changed the input) or `{ approved: false, reason? }` when rejected; expired or
 * cancelled: `cancelled`. A question set: `resolved` with its answers as the schema's payload;
 * skipped, expired or cancelled: `cancelled`.
 */
export function resumeEntries(parked: ParkedInterrupt[], items: SettledItem[]): ResumeEntry[] {
  const byId = new Map(items.map((item) => [item.id, item]))
  return parked.map(({ interrupt, itemId, kind, shape, input }): ResumeEntry => {
    const item = byId.get(itemId)
    const cancelled: ResumeEntry = { interruptId: interrupt.id, status: 'cancelled' }
    if (!item) return cancelled
    if (kind === 'approval') {
      if (item.status === 'approved') {
        const edited =
          item.input !== undefined && JSON.stringify(item.input) !== JSON.stringify(input)
        return {
          interruptId: interrupt.id,
          status: 'resolved',
          payload: { approved: true, ...(edited ? { editedArgs: item.input } : {}) },
        }
      }
      if (item.status === 'rejected') {
        return {
          interruptId: interrupt.id,
          status: 'resolved',
          payload: { approved: false, ...(item.reason ? { reason: item.reason } : {}) },
        }
      }
      return cancelled
    }
    if (item.status !== 'answered' || item.skipped) return cancelled
    return { interruptId: interrupt.id, status: 'resolved', payload: answersPayload(item, shape) }
  })
}
