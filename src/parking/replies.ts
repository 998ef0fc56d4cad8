import vine from '@vinejs/vine'
import { DecisionMismatchError, InvalidDecisionError, issuesOf } from '../errors.js'
import type { ElicitationRequest } from '../core/frames.js'
import { isWellFormedDeep } from '../core/text.js'

/** Caps on what a person sends (bytes of JSON, characters of text). */
export const REPLY_LIMITS = {
  reasonChars: 2000,
  editedInputBytes: 64 * 1024,
  answerChars: 2000,
  valuesPerQuestion: 100,
  questions: 200,
}

const park = () => vine.number({ strict: true }).withoutDecimals().min(1).optional()

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

/** Validate; a lone surrogate anywhere in `body` is refused first (it would reach readers). */
async function run<T>(body: unknown, validate: () => Promise<T>): Promise<T> {
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
 * An approve/reject body: `{ reason?, input? }`. `input` (approve only) replaces the tool's
 * arguments whole.
 *
 * @throws InvalidDecisionError naming the field and rule, never the value
 */
export async function validateDecision(
  body: unknown
): Promise<{ reason?: string; input?: unknown; park?: number }> {
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

/** The park a reply names, if any (validated by {@link validateDecision} / {@link validateReply}). */
export function namedPark(body: unknown): number | undefined {
  const named = (body as { park?: unknown } | null)?.park
  return typeof named === 'number' ? named : undefined
}

/**
 * A question-set reply (sink-spi.md, "Elicitation shapes"), checked against its request and
 * normalized: an absent question takes its `defaults`; values not among `options` are dropped
 * unless `allowFreeText`; a single-choice question keeps one value; `skipped` clears everything.
 *
 * @throws InvalidDecisionError for a wrong shape, an over-long value, or a question id the set
 *   does not have
 */
export async function validateReply(
  body: unknown,
  request: ElicitationRequest
): Promise<{ answers: Record<string, string[]>; skipped: boolean }> {
  const out = await run(body, () => reply.validate(body ?? {}))
  const given = out.answers ?? {}
  const known = new Map(request.questions.map((q) => [q.id, q]))
  const unknown = Object.keys(given).filter((id) => !known.has(id))
  if (unknown.length > 0 || Object.keys(given).length > REPLY_LIMITS.questions) {
    throw new InvalidDecisionError([{ field: 'answers', rule: 'knownQuestion' }])
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
