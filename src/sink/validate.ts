import vine, { errors } from '@vinejs/vine'
import { DateTime } from 'luxon'
import type { FieldContext } from '@vinejs/vine/types'
import { InvalidFrameError } from '../errors.js'
import { AGENT_STREAM_ERROR_CODES, type StreamFrame } from '../core/frames.js'
import { DEFAULTS } from '../defaults.js'
import { isWellFormedDeep } from '../core/text.js'
import { jsonBytes, stateShapeIssue } from '../core/agent_state.js'
import { tooDeep } from '../core/json_depth.js'

/**
 * Text that every SQL dialect stores and returns unchanged, so cursor offsets (UTF-16 code units)
 * mean the same after a round trip: well-formed Unicode (no lone surrogate, which PostgreSQL and
 * MySQL would replace) and no NUL (PostgreSQL `text` refuses it).
 */
const storableText = vine.createRule((value: unknown, _: undefined, field: FieldContext) => {
  if (typeof value !== 'string') return
  if (!value.isWellFormed() || value.includes('\u0000')) {
    field.report(
      'The {{ field }} field must be well-formed Unicode without NUL',
      'storableText',
      field
    )
  }
})

const text = () => vine.string().use(storableText())

/** An ISO-8601 instant with an offset (`2026-01-01T00:00:00Z`): when a parked item lapses. */
const isoInstant = vine.createRule((value: unknown, _: undefined, field: FieldContext) => {
  if (typeof value !== 'string') return
  if (!/(Z|[+-]\d{2}:?\d{2})$/.test(value) || !DateTime.fromISO(value).isValid) {
    field.report('The {{ field }} field must be an ISO-8601 instant', 'isoInstant', field)
  }
})
const instant = () => vine.string().use(isoInstant())

/** A JSON Schema: an object or a boolean (`true` allows anything), as `approval.inputSchema`. */
const jsonSchemaValue = vine.createRule((value: unknown, _: undefined, field: FieldContext) => {
  const object = value !== null && typeof value === 'object' && !Array.isArray(value)
  if (!object && typeof value !== 'boolean') {
    field.report('The {{ field }} field must be a JSON Schema', 'jsonSchema', field)
  }
})
/**
 * A `custom` event's value: any JSON, at most `DEFAULTS.maxCustomValueBytes` of it (`maxBytes`),
 * nested no deeper than the package's depth rule (`maxDepth`, `MAX_JSON_DEPTH`).
 */
const customValue = vine.createRule((value: unknown, _: undefined, field: FieldContext) => {
  if (tooDeep(value)) {
    field.report('The {{ field }} field is nested too deep', 'maxDepth', field)
    return
  }
  if (jsonBytes(value) > DEFAULTS.maxCustomValueBytes) {
    field.report('The {{ field }} field is too large', 'maxBytes', field)
  }
})

/** Ids are stored in indexed columns: keep them short and printable. */
const id = () => vine.string().minLength(1).maxLength(191)
const toolKind = () => vine.enum(['read', 'action'] as const)

const elicitationRequest = vine.object({
  id: id(),
  source: vine.enum(['intake', 'ask'] as const),
  preamble: text().optional(),
  questions: vine.array(
    vine
      .object({
        id: id(),
        prompt: text(),
        options: vine.array(
          vine
            .object({ value: text(), label: text(), hotkey: text().optional() })
            .allowUnknownProperties()
        ),
        multiple: vine.boolean({ strict: true }).optional(),
        defaults: vine.array(text()).optional(),
        allowFreeText: vine.boolean({ strict: true }).optional(),
      })
      .allowUnknownProperties()
  ),
})

/** Fields of each known event kind; unknown kinds pass with only `kind` checked. */
const eventKinds = {
  'step-start': {},
  'step-finish': {
    usage: vine.record(vine.any()).optional(),
    costUsd: vine.number({ strict: true }).nullable().optional(),
    reasoningMs: vine.number({ strict: true }).min(0).optional(),
    model: text().optional(),
  },
  'text': { text: text() },
  'reasoning': { text: text() },
  'tool-input-start': { id: id(), name: text(), toolKind: toolKind(), parentId: id().optional() },
  'tool-input-delta': { id: id(), delta: text() },
  'tool-input-available': {
    id: id(),
    name: text(),
    input: vine.any().optional(),
    toolKind: toolKind(),
    parentId: id().optional(),
  },
  'tool-output': { id: id(), output: vine.any().optional() },
  'tool-output-error': { id: id(), error: vine.any().optional() },
  'tool-output-denied': {
    id: id(),
    reason: text().optional(),
    status: vine.enum(['rejected', 'expired', 'cancelled'] as const).optional(),
    message: text().optional(),
  },
  'elicitation': { id: id(), request: elicitationRequest },
  'approval-requested': {
    id: id(),
    approver: text(),
    confirmation: vine.record(vine.any()).optional(),
    expiresAt: text().optional(),
    reason: text().optional(),
  },
  'approval-settled': {
    id: id(),
    status: vine.enum(['approved', 'rejected', 'expired'] as const),
    approver: text().optional(),
    decidedBy: text().optional(),
    decidedVia: text().optional(),
    remember: vine.boolean({ strict: true }).optional(),
    reason: text().optional(),
  },
  'ui': {
    id: id(),
    component: text(),
    props: vine.any().optional(),
    version: vine.number({ strict: true }).optional(),
    fallbackText: text().optional(),
    componentVersions: vine.record(vine.number({ strict: true })).optional(),
    toolCallId: id().optional(),
  },
  'title': { title: text() },
  'source': {
    id: id(),
    sourceType: vine.enum(['url', 'document'] as const),
    url: text().optional(),
    title: text().optional(),
    mediaType: text().optional(),
    filename: text().optional(),
  },
  'file': { mediaType: text(), url: text(), filename: text().optional() },
  'subagent-start': { runId: id(), name: text().optional(), parentToolCallId: id().optional() },
  'subagent-finish': {
    runId: id(),
    status: vine.enum(['success', 'failed'] as const).optional(),
  },
  'cancelled': {},
  'user-message': {
    id: text(),
    parts: vine.array(
      vine.union([
        vine.union.if(
          (value) => vine.helpers.isObject(value) && (value as { type?: unknown }).type === 'text',
          vine.object({ type: vine.literal('text'), text: text() })
        ),
        vine.union.else(
          vine.object({
            type: vine.literal('file'),
            mediaType: text(),
            url: text(),
            filename: text().optional(),
          })
        ),
      ])
    ),
  },
  // Its rules (exactly one of the two, an object, a JSON Patch) are `stateShapeIssue`'s.
  'state': { snapshot: vine.any().optional(), delta: vine.any().optional() },
  'queue': {
    queue: vine.any().optional(),
    started: vine.object({ messageId: id(), runId: id() }).optional(),
  },
  'custom': {
    name: text().minLength(1).maxLength(191),
    value: vine.any().use(customValue()).nullable(),
  },
} as const

const isKind = (kind: string) => (value: unknown) =>
  vine.helpers.isObject(value) && (value as { kind?: unknown }).kind === kind

const event = vine.union([
  ...Object.entries(eventKinds).map(([kind, fields]) =>
    vine.union.if(
      isKind(kind),
      vine.object({ kind: vine.literal(kind), ...fields }).allowUnknownProperties()
    )
  ),
  // A kind this version does not know: readers must tolerate it, so writers may write it.
  vine.union.else(vine.object({ kind: id() }).allowUnknownProperties()),
])

const isFrame = (t: string) => (value: unknown) =>
  vine.helpers.isObject(value) && (value as { t?: unknown }).t === t

const frame = vine.union([
  vine.union.if(isFrame('text'), vine.object({ t: vine.literal('text'), v: text() })),
  vine.union.if(
    isFrame('component'),
    vine.object({
      t: vine.literal('component'),
      name: text().minLength(1),
      data: vine.any().optional(),
      id: id().optional(),
      toolCallId: id().optional(),
      version: vine.number({ strict: true }).optional(),
      fallbackText: text().optional(),
      componentVersions: vine.record(vine.number({ strict: true })).optional(),
      partial: vine.literal(true).optional(),
    })
  ),
  vine.union.if(isFrame('event'), vine.object({ t: vine.literal('event'), event })),
  vine.union.if(
    isFrame('error'),
    vine.object({
      t: vine.literal('error'),
      code: vine.enum(AGENT_STREAM_ERROR_CODES),
      message: text(),
    })
  ),
  vine.union.if(
    isFrame('elicitation'),
    vine.object({
      t: vine.literal('elicitation'),
      runId: id(),
      id: id(),
      request: elicitationRequest,
    })
  ),
  vine.union.if(
    isFrame('approval'),
    vine.object({
      t: vine.literal('approval'),
      target: vine.object({ kind: vine.literal('proposal'), proposalId: id() }).optional(),
      runId: id(),
      id: id(),
      toolName: text().minLength(1),
      input: vine.any().optional(),
      inputSchema: vine.any().use(jsonSchemaValue()).optional(),
      confirmation: vine.record(vine.any()).optional(),
      approver: text().optional(),
      expiresAt: instant().optional(),
    })
  ),
  vine.union.else(
    vine.object({
      t: vine.enum(['text', 'component', 'event', 'error', 'elicitation', 'approval'] as const),
    })
  ),
])

const validator = vine.compile(vine.object({ frame }))

/** Default cap on one frame's serialized size: 256 KiB. */
export const DEFAULT_MAX_FRAME_BYTES = DEFAULTS.maxFrameBytes

/**
 * Check a frame against the SPI and the size cap, and return the frame as it will be stored
 * (unknown top-level fields dropped; unknown event fields kept, since kinds only ever grow).
 * Every string in it, free-form data and keys included, must be well-formed Unicode (rule
 * `wellFormedUnicode`): a lone surrogate would leave as a `\udXXX` escape some clients reject.
 * A pair split across two text writes is joined by the writer before this check.
 *
 * @param maxBytes cap on `JSON.stringify(frame)` in UTF-8 bytes
 * @throws InvalidFrameError naming each broken rule (never the value)
 */
export async function validateFrame(input: unknown, maxBytes: number): Promise<StreamFrame> {
  let serialized: string | undefined
  try {
    serialized = JSON.stringify(input)
  } catch {
    throw new InvalidFrameError([{ field: '', rule: 'json' }])
  }
  if (serialized === undefined) throw new InvalidFrameError([{ field: '', rule: 'object' }])
  if (Buffer.byteLength(serialized, 'utf8') > maxBytes) {
    throw new InvalidFrameError([{ field: '', rule: 'maxBytes' }])
  }
  // A `state` frame is kept as it was when written (its JSON): the writer checks the agent's
  // state against it and stores it later, and the caller's objects may change meanwhile.
  const kind = (input as { event?: { kind?: unknown } } | null)?.event?.kind
  const checked = kind === 'state' ? JSON.parse(serialized) : input
  try {
    const output = await validator.validate({ frame: checked })
    if (!isWellFormedDeep(output.frame)) {
      throw new InvalidFrameError([{ field: '', rule: 'wellFormedUnicode' }])
    }
    const written = (output.frame as { event?: Record<string, unknown> }).event
    const stateIssue = written?.kind === 'state' ? stateShapeIssue(written) : null
    if (stateIssue) throw new InvalidFrameError([{ field: 'event', rule: stateIssue }])
    return output.frame as StreamFrame
  } catch (error) {
    if (error instanceof errors.E_VALIDATION_ERROR) {
      const messages = error.messages as { field: string; rule: string }[]
      throw new InvalidFrameError(
        messages.map((m) => ({ field: m.field.replace(/^frame\.?/, ''), rule: m.rule }))
      )
    }
    throw error
  }
}
