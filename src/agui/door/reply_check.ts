import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { ElicitationRequest } from '../../core/frames.js'
import {
  APPROVAL_RESPONSE_SCHEMA,
  questionSetSchema,
  type ApprovalReply,
} from '../translate/schemas.js'

/** Draft 2020-12, as the schemas declare; `strict` refuses a schema keyword it does not know. */
const ajv = new Ajv2020({ strict: true, allErrors: false })
const approval = ajv.compile<ApprovalReply>(APPROVAL_RESPONSE_SCHEMA)

/** Compiled question-set schemas, by their JSON (the same request compiles once). */
const compiled = new Map<string, ValidateFunction>()
const CACHE_LIMIT = 256

/**
 * A resume payload against exactly the `responseSchema` its interrupt advertised (one source for
 * both: `src/agui/translate/schemas.ts`, checked here by Ajv, JSON Schema draft 2020-12).
 */
export const replyCheck = {
  /** `payload` as an approval reply, or `null` when it breaks {@link APPROVAL_RESPONSE_SCHEMA}. */
  approval(payload: unknown): ApprovalReply | null {
    return approval(payload) ? payload : null
  },

  /** Whether `payload` fits the question set's advertised schema. */
  questionSet(request: ElicitationRequest, payload: unknown): boolean {
    const schema = questionSetSchema(request)
    const key = JSON.stringify(schema)
    let validate = compiled.get(key)
    if (!validate) {
      if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value!)
      validate = ajv.compile(schema)
      compiled.set(key, validate)
    }
    return validate(payload)
  },
}
