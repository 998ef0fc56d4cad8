import type { ElicitationRequest } from '../../core/frames.js'
import { fitsOwnSchema } from '../../core/json_schema.js'
import {
  APPROVAL_RESPONSE_SCHEMA,
  questionSetSchema,
  type ApprovalReply,
} from '../translate/schemas.js'

/**
 * A resume payload against exactly the `responseSchema` its interrupt advertised (one source for
 * both: `src/agui/translate/schemas.ts`, checked here by the package's one JSON Schema
 * validator, `src/core/json_schema.ts`, draft 2020-12).
 */
export const replyCheck = {
  /** `payload` as an approval reply, or `null` when it breaks {@link APPROVAL_RESPONSE_SCHEMA}. */
  approval(payload: unknown): ApprovalReply | null {
    return fitsOwnSchema(APPROVAL_RESPONSE_SCHEMA, payload) ? (payload as ApprovalReply) : null
  },

  /** Whether `payload` fits the question set's advertised schema. */
  questionSet(request: ElicitationRequest, payload: unknown): boolean {
    return fitsOwnSchema(questionSetSchema(request), payload)
  },
}
