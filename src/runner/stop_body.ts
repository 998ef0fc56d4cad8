import vine from '@vinejs/vine'
import { InvalidStopError, issuesOf } from '../errors.js'
import { DEPTH_ISSUE, tooDeep } from '../core/json_depth.js'
import { STOP_MODES, type StopMode } from '../store/stop_requests.js'

const stopBody = vine.compile(
  vine.object({
    mode: vine.enum(STOP_MODES).optional(),
  })
)

/**
 * A stop route's body: `{ mode? }` (`keep`, the default, or `rollback`); none at all reads as
 * `{}`. The same rules on every stop route (native cancel, both doors' stop routes, the console).
 *
 * @throws InvalidStopError naming the field and rule, never the value: any other field
 *   (`knownField`), nested deeper than `MAX_JSON_DEPTH` (`maxDepth`), `mode` not a stop mode (`enum`)
 */
export async function validateStop(body: unknown): Promise<{ mode: StopMode }> {
  if (tooDeep(body)) throw new InvalidStopError([DEPTH_ISSUE])
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    if (Object.keys(body).some((key) => key !== 'mode')) {
      throw new InvalidStopError([{ field: '', rule: 'knownField' }])
    }
  }
  try {
    const out = await stopBody.validate(body ?? {})
    return { mode: out.mode ?? 'keep' }
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidStopError(issues)
  }
}
