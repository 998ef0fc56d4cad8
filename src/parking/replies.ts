import vine from '@vinejs/vine'
import { DecisionMismatchError, InvalidDecisionError, issuesOf } from '../errors.js'
import type { ElicitationRequest } from '../core/frames.js'
import { isWellFormedDeep } from '../core/text.js'
import { DEPTH_ISSUE, tooDeep } from '../core/json_depth.js'

/** Caps on what a person sends (bytes of JSON, characters of text). */
export const REPLY_LIMITS = {
  reasonChars: 2000,
  editedInputBytes: 64 * 1024,
  answerChars: 2000,
  valuesPerQuestion: 100,
  questions: 200,
}

/** The largest park number a decision may name (the column is a 32-bit integer). */
export const MAX_PARK = 2_147_483_647

/** Which park of a reused item id a decision is for: a whole number from 1. */
const park = () => vine.number({ strict: true }).withoutDecimals().min(1).max(MAX_PARK).optional()

const decision = vine.compile(
  vine.object({
    reason: vine.string().maxLength(REPLY_LIMITS.reasonChars).optional(),
    input: vine.any().optional(),
    park: park(),
    // Present only to be refused as a mismatch (answers belong to a question set).
    answers: vine.any().optional(),
    skipped: vine.any().optional(),
  })
)

const reply = vine.compile(
  vine.object({
    answers: vine
      .record(
        vine
          .array(vine.string().maxLength(REPLY_LIMITS.answerChars))
          .maxLength(REPLY_LIMITS.valuesPerQuestion)
      )
      .optional(),
    skipped: vine.boolean({ strict: true }).optional(),
    answeredByRef: vine.string().maxLength(191).optional(),
    park: park(),
  })
)

/** The fields each body may carry: any other is refused, as the AG-UI door refuses them. */
const DECISION_FIELDS = new Set(['reason', 'input', 'park', 'answers', 'skipped'])
const REPLY_FIELDS = new Set(['answers', 'skipped', 'answeredByRef', 'park'])

/**
 * The rules every body meets before VineJS reads it: nested at most `MAX_JSON_DEPTH` levels
 * (`src/core/json_depth.ts`), and no field the body does not define (`knownField`; the field is
 * not named, a client chose it).
 */
function checkShape(body: unknown, fields: Set<string>) {
  if (tooDeep(body)) throw new InvalidDecisionError([DEPTH_ISSUE])
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    if (Object.keys(body).some((key) => !fields.has(key))) {
      throw new InvalidDecisionError([{ field: '', rule: 'knownField' }])
    }
  }
}

async function run<T>(body: unknown, validate: () => Promise<T>): Promise<T> {
  // A lone surrogate anywhere in `body` would reach readers.
  if (!isWellFormedDeep(body)) {
    throw new InvalidDecisionError([{ field: '', rule: 'wellFormedUnicode' }])
  }
  try {
    return await validate()
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidDecisionError(issues)
  }
}

/**
 * An approve/reject body: `{ reason?, input?, park? }`. `input` (approve only) replaces the tool's
 * arguments whole.
 *
 * @throws InvalidDecisionError naming the field and rule, never the value: any other field
 *   (`knownField`), nested deeper than `MAX_JSON_DEPTH` (`maxDepth`), `input` over 64 KiB of JSON
 *   (`maxBytes`)
 */
export async function validateDecision(
  body: unknown
): Promise<{ reason?: string; input?: unknown; park?: number }> {
  checkShape(body, DECISION_FIELDS)
  const out = await run(body, () => decision.validate(body ?? {}))
  if (out.answers !== undefined || out.skipped !== undefined) {
    throw new DecisionMismatchError('a decision')
  }
  if (out.input !== undefined) {
    const size = Buffer.byteLength(JSON.stringify(out.input) ?? '', 'utf8')
    if (size > REPLY_LIMITS.editedInputBytes)
      throw new InvalidDecisionError([{ field: 'input', rule: 'maxBytes' }])
  }
  return { reason: out.reason, input: out.input, park: out.park }
}

/** A question-set reply's shape, checked before any lookup ({@link validateAnswer}). */
export interface AnswerBody {
  answers?: Record<string, string[]>
  skipped?: boolean
  park?: number
}

/**
 * The shape of a question-set reply, `{ answers?, skipped?, answeredByRef?, park? }`, checked on
 * its own (VineJS), before the item it answers is looked up.
 *
 * @throws InvalidDecisionError naming the field and rule, never the value: any other field
 *   (`knownField`), nesting deeper than `MAX_JSON_DEPTH`, an over-long value
 */
export async function validateAnswer(body: unknown): Promise<AnswerBody> {
  checkShape(body, REPLY_FIELDS)
  const out = await run(body, () => reply.validate(body ?? {}))
  return { answers: out.answers, skipped: out.skipped, park: out.park }
}

/**
 * A question-set reply (docs/design.md, "Question sets"), checked against its request exactly
 * as the `responseSchema` the AG-UI door advertises for it: a value must be one of the question's
 * `options` unless `allowFreeText` (`option`), a single-choice question takes at most one value
 * (`single`). Then normalized: an absent question takes its `defaults` (those not among
 * `options` dropped unless `allowFreeText`, a single-choice question keeps the first); repeated
 * values kept once; `skipped` clears everything.
 *
 * @throws InvalidDecisionError for a wrong shape, any other field (`knownField`), nesting deeper
 *   than `MAX_JSON_DEPTH`, an over-long value, a question id the set does not have, a value not
 *   among the options, several values for a single-choice question
 */
export async function validateReply(
  body: unknown,
  request: ElicitationRequest
): Promise<{ answers: Record<string, string[]>; skipped: boolean }> {
  return normalizeReply(await validateAnswer(body), request)
}

/**
 * A reply whose shape {@link validateAnswer} checked, against its request, normalized (see
 * {@link validateReply}).
 *
 * @throws InvalidDecisionError for a question id the set does not have, a value not among the
 *   options, several values for a single-choice question
 */
export function normalizeReply(
  out: AnswerBody,
  request: ElicitationRequest
): { answers: Record<string, string[]>; skipped: boolean } {
  const given = out.answers ?? {}
  const known = new Map(request.questions.map((q) => [q.id, q]))
  const unknown = Object.keys(given).filter((id) => !known.has(id))
  if (unknown.length > 0 || Object.keys(given).length > REPLY_LIMITS.questions) {
    throw new InvalidDecisionError([{ field: 'answers', rule: 'knownQuestion' }])
  }
  for (const [id, values] of Object.entries(given)) {
    const question = known.get(id)!
    const allowed = new Set(question.options.map((o) => o.value))
    if (!question.allowFreeText && values.some((v) => !allowed.has(v))) {
      throw new InvalidDecisionError([{ field: 'answers', rule: 'option' }])
    }
    if (!question.multiple && values.length > 1) {
      throw new InvalidDecisionError([{ field: 'answers', rule: 'single' }])
    }
  }
  if (out.skipped) return { answers: {}, skipped: true }
  const answers: Record<string, string[]> = {}
  for (const question of request.questions) {
    const values = Object.hasOwn(given, question.id)
      ? given[question.id]
      : (question.defaults ?? [])
    const allowed = new Set(question.options.map((o) => o.value))
    let kept = values.filter((v) => question.allowFreeText || allowed.has(v))
    kept = [...new Set(kept)]
    if (!question.multiple) kept = kept.slice(0, 1)
    answers[question.id] = kept
  }
  return { answers, skipped: false }
}
