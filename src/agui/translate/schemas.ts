import type { ElicitationRequest } from '../../core/frames.js'

/**
 * The reply schemas an interrupt advertises (`responseSchema`, JSON Schema draft 2020-12) and
 * {@link validateReplyPayload}, which checks a resume payload against exactly that schema: one
 * definition per reply shape, read by the client and by the server.
 */

/**
 * The JSON Schema of an approval's reply (`tool_call` interrupt's `responseSchema`):
 * `{ approved: boolean, reason?: string (at most 2000 characters), editedArgs?: object }`;
 * `editedArgs` replaces the call's arguments whole (agui-conformance.md 2c, approve-with-edits).
 * The server checks a reply with `validateReplyPayload(APPROVAL_RESPONSE_SCHEMA, payload)`.
 */
export const APPROVAL_RESPONSE_SCHEMA: Record<string, unknown> = Object.freeze({
  type: 'object',
  properties: Object.freeze({
    approved: Object.freeze({ type: 'boolean' }),
    reason: Object.freeze({ type: 'string', maxLength: 2000 }),
    editedArgs: Object.freeze({ type: 'object' }),
  }),
  required: Object.freeze(['approved']),
  additionalProperties: false,
})

/** An approval reply that passed {@link APPROVAL_RESPONSE_SCHEMA}. */
export interface ApprovalReply {
  approved: boolean
  reason?: string
  editedArgs?: Record<string, unknown>
}

/** `payload` as an {@link ApprovalReply}, or `null` when it does not match the schema. */
export function parseApprovalReply(payload: unknown): ApprovalReply | null {
  return validateReplyPayload(APPROVAL_RESPONSE_SCHEMA, payload) ? (payload as ApprovalReply) : null
}

/**
 * The JSON Schema (draft 2020-12) of a question set's reply, as an `input_required` interrupt's
 * `responseSchema`: `{ answers: { [questionId]: string[] }, skipped? }` (sink-spi.md).
 */
export function questionSetSchema(request: ElicitationRequest): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  for (const question of request.questions) {
    const values: Record<string, unknown> = { type: 'string' }
    if (!question.allowFreeText) values.enum = question.options.map((o) => o.value)
    properties[question.id] = {
      type: 'array',
      title: question.prompt,
      items: values,
      ...(question.multiple ? {} : { maxItems: 1 }),
      ...(question.defaults ? { default: question.defaults } : {}),
    }
  }
  return {
    type: 'object',
    properties: {
      answers: { type: 'object', properties, additionalProperties: false },
      skipped: { type: 'boolean' },
    },
    additionalProperties: false,
  }
}

/** Keywords that only annotate: they never reject a value. */
const ANNOTATIONS = new Set(['title', 'description', 'default'])
/** Keywords {@link validateReplyPayload} checks. */
const CHECKED = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'maxItems',
  'maxLength',
])

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

function hasType(value: unknown, type: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(value)
    case 'array':
      return Array.isArray(value)
    case 'string':
      return typeof value === 'string'
    case 'boolean':
      return typeof value === 'boolean'
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
    case 'integer':
      return Number.isInteger(value)
    case 'null':
      return value === null
    default:
      throw new Error(`Unsupported JSON Schema type ${JSON.stringify(type)}`)
  }
}

function matches(schema: Record<string, unknown>, value: unknown): boolean {
  for (const keyword of Object.keys(schema)) {
    if (!CHECKED.has(keyword) && !ANNOTATIONS.has(keyword)) {
      // A keyword this checker does not know must not pass silently.
      throw new Error(`Unsupported JSON Schema keyword "${keyword}"`)
    }
  }
  if (schema.type !== undefined && !hasType(value, schema.type)) return false
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => option === value)) return false
  // JSON Schema counts characters (code points), not UTF-16 units.
  if (typeof schema.maxLength === 'number' && typeof value === 'string') {
    if ([...value].length > schema.maxLength) return false
  }
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return false
    if (
      isObject(schema.items) &&
      !value.every((item) => matches(schema.items as Record<string, unknown>, item))
    )
      return false
  }
  if (isObject(value)) {
    const properties = isObject(schema.properties) ? schema.properties : {}
    if (Array.isArray(schema.required)) {
      if (!schema.required.every((name) => Object.hasOwn(value, name))) return false
    }
    for (const [name, field] of Object.entries(value)) {
      if (Object.hasOwn(properties, name)) {
        if (!matches(properties[name] as Record<string, unknown>, field)) return false
      } else if (schema.additionalProperties === false) return false
    }
  }
  return true
}

/**
 * Whether `payload` matches `schema`, a reply schema this package advertises
 * ({@link APPROVAL_RESPONSE_SCHEMA}, {@link questionSetSchema}): `type`, `properties`,
 * `required`, `additionalProperties: false`, `items`, `enum`, `maxItems`, `maxLength` are
 * checked; `title`, `description`, `default` only annotate.
 *
 * @throws Error when `schema` uses any other keyword (it is not one of ours).
 */
export function validateReplyPayload(schema: object, payload: unknown): boolean {
  return matches(schema as Record<string, unknown>, payload)
}
