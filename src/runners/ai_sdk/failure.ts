import {
  APICallError,
  InvalidToolApprovalError,
  InvalidToolApprovalSignatureError,
  NoContentGeneratedError,
  NoOutputGeneratedError,
  ToolCallNotFoundForApprovalError,
} from 'ai'
import type { AgentStreamErrorCode } from '../../core/frames.js'

/**
 * The stable failure code of an error the AI SDK reported (a model stream `error` part, or a
 * throw): a quota or rate limit (HTTP 402/429) is `quota_exceeded`, a model that produced
 * nothing `model_no_output`; an approval the SDK refuses to resume from (a signed request
 * whose stored signature is missing or does not verify, `experimental_toolApprovalSecret`; a
 * response with no request or call) `replay_diverged`; anything else `run_failed`. Only the
 * code (and its fixed sentence) reaches a reader, never the error's text (invariant 8,
 * docs/design.md).
 */
export function failureCode(error: unknown): AgentStreamErrorCode {
  if (APICallError.isInstance(error) && (error.statusCode === 429 || error.statusCode === 402)) {
    return 'quota_exceeded'
  }
  if (NoOutputGeneratedError.isInstance(error) || NoContentGeneratedError.isInstance(error)) {
    return 'model_no_output'
  }
  if (
    InvalidToolApprovalSignatureError.isInstance(error) ||
    InvalidToolApprovalError.isInstance(error) ||
    ToolCallNotFoundForApprovalError.isInstance(error)
  ) {
    return 'replay_diverged'
  }
  return 'run_failed'
}
