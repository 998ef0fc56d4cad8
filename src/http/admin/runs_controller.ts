import { randomBytes } from 'node:crypto'
import vine from '@vinejs/vine'
import { nowMs } from '../../store/sql.js'
import type { HttpContext } from '@adonisjs/core/http'
import { RUN_ID, isRunId, type StreamFrame } from '../../core/frames.js'
import type { ProjectionRules } from '../../core/projection.js'
import { AgentStreamException, describeIssues, issuesOf } from '../../errors.js'
import { DEPTH_ISSUE, tooDeep } from '../../core/json_depth.js'
import type { RunControl } from '../../runner/run_control.js'
import { validateStop } from '../../runner/stop_body.js'
import type { Parking } from '../../parking/parking.js'
import { sinkInternals, type LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import { RUN_STATUSES, RunList, type RunStatus } from '../../store/run_list.js'
import { inspectRun } from '../../inspection/index.js'
import {
  resolvePrincipal,
  type AdminAuthorizer,
  type DisplayName,
  type PrincipalResolver,
} from '../principal.js'
import { PrincipalNames } from './names.js'
import { adminAllowed, adminHeaders, CSRF_FIELD, csrfFields, csrfValid } from './access.js'
import { consoleFrame } from './console_frame.js'
import { renderRunPage, type TranscriptEntry } from './run_page.js'
import { RUN_AGES, renderRunsPage, type RunsPageContext, type RunsQuery } from './runs_page.js'

/** Runs per page of the list. */
const PAGE_SIZE = 50
/** Entries of a transcript the run view shows at most (the rest: `agent-stream:inspect`). */
const TRANSCRIPT_LIMIT = 5000

const runsQuery = vine.compile(
  vine.object({
    status: vine.enum(RUN_STATUSES).optional(),
    thread: vine.string().regex(RUN_ID).optional(),
    age: vine.enum(Object.keys(RUN_AGES)).optional(),
    tool: vine.string().maxLength(191).optional(),
    before: vine
      .string()
      .regex(/^[0-9]{1,15}~[A-Za-z0-9_:.-]{1,191}$/)
      .optional(),
  })
)

/** Empty fields of a GET form are no filter. */
function present(qs: Record<string, unknown>) {
  const out: Record<string, unknown> = {}
  for (const key of ['status', 'thread', 'age', 'tool', 'before']) {
    if (qs[key] !== undefined && qs[key] !== '') out[key] = qs[key]
  }
  return out
}

/**
 * The admin's runs: a list by status (running, parked, finished, failed, cancelled; derived
 * from the rows, `store/run_list.ts`) with filters and keyset pages, and a run view with its
 * timeline (the inspection `agent-stream:inspect` prints, drawn) and its transcript (stored frames
 * through the sink's replay and the public projection, as the doors read them, and what the
 * person said: `console_frame.ts`). The same gate
 * and headers as the admin page: 403 unless the app's `admin` hook allows, a strict CSP, every
 * value escaped and isolated from bidi controls.
 */
export class RunsController {
  readonly runs: RunList

  constructor(
    readonly sink: LucidTokenStreamSink,
    readonly parking: Parking,
    readonly control: RunControl,
    readonly options: {
      base: string
      authorize?: AdminAuthorizer
      principal?: PrincipalResolver
      displayName?: DisplayName
      rules: ProjectionRules
    }
  ) {
    this.runs = new RunList(() => sinkInternals(sink).client, sink.tables)
  }

  /** `GET <base>/admin/runs`: the list. A filter that breaks a rule is 400, naming it. */
  async list(ctx: HttpContext) {
    if (!(await adminAllowed(ctx, this.options.authorize))) return
    const page: RunsPageContext = {
      base: this.options.base,
      nonce: randomBytes(16).toString('base64'),
      query: {},
    }
    adminHeaders(ctx, page.nonce)
    let query: RunsQuery
    try {
      query = await runsQuery.validate(present(ctx.request.qs()))
    } catch (error) {
      const issues = issuesOf(error)
      if (!issues) throw error
      page.problem = describeIssues('Invalid filter', issues, '(query)')
      ctx.response.status(400)
      return ctx.response.type('html').send(renderRunsPage(page, []))
    }
    page.query = query
    const before = query.before?.split('~')
    const runs = await this.runs.list({
      status: query.status as RunStatus | undefined,
      threadId: query.thread,
      tool: query.tool,
      since: query.age ? nowMs() - RUN_AGES[query.age] : undefined,
      before: before ? { createdAt: Number(before[0]), runId: before[1] } : undefined,
      limit: PAGE_SIZE + 1,
    })
    if (runs.length > PAGE_SIZE) {
      runs.length = PAGE_SIZE
      const last = runs.at(-1)!
      page.next = `${last.createdAt}~${last.runId}`
    }
    return ctx.response.type('html').send(renderRunsPage(page, runs))
  }

  /** `GET <base>/admin/runs/:runId`: the run view; 404 for a run with no stream. */
  async show(ctx: HttpContext) {
    if (!(await adminAllowed(ctx, this.options.authorize))) return
    const nonce = randomBytes(16).toString('base64')
    adminHeaders(ctx, nonce)
    const runId = ctx.params.runId
    const run = isRunId(runId) ? await this.runs.find(runId) : null
    const inspection = run ? await inspectRun(this.sink, this.parking, run.runId) : null
    if (!run || !inspection) {
      return ctx.response.status(404).type('html').send('<p>No such run.</p>')
    }
    const transcript: TranscriptEntry[] = []
    let truncated = false
    // The one read path (`sink.replay`) and the one public projection, as the doors read a run,
    // with what the person said beside it (`consoleFrame`).
    for await (const item of this.sink.replay(run.runId, {
      until: { seq: inspection.head.lastSeq },
    })) {
      if (transcript.length >= TRANSCRIPT_LIMIT) {
        truncated = true
        break
      }
      if (item.t === 'end') {
        transcript.push({ t: 'end' })
        continue
      }
      const shown = consoleFrame(item as StreamFrame, this.options.rules)
      if (shown) transcript.push(shown)
    }
    const names = await new PrincipalNames(this.options.displayName).load(
      inspection.parked.map((item) => item.decidedBy)
    )
    const stopped = ctx.request.qs().stopped
    const page = renderRunPage(
      {
        base: this.options.base,
        nonce,
        truncated,
        names,
        stopFields: csrfFields(ctx, this.options.base),
        stopped: typeof stopped === 'string' ? stopped : undefined,
      },
      run,
      inspection,
      transcript
    )
    return ctx.response.type('html').send(page)
  }

  /**
   * `POST <base>/admin/runs/:runId/stop` (a form: the CSRF token, `mode`): stop a running or
   * parked run through run control, as an admin (the app's `admin` hook passed), then back to the
   * run view with what the stop said (`?stopped=`).
   */
  async stop(ctx: HttpContext) {
    if (!(await adminAllowed(ctx, this.options.authorize))) return
    const body = ctx.request.body() as Record<string, unknown>
    if (tooDeep(body)) {
      ctx.response.status(422)
      return ctx.response
        .type('html')
        .send(`<p>${describeIssues('Invalid form', [DEPTH_ISSUE])}</p>`)
    }
    if (!csrfValid(ctx, body[CSRF_FIELD])) {
      return ctx.response.status(403).type('html').send('<p>The form expired: reload the page.</p>')
    }
    const runId = ctx.params.runId
    let said: string
    try {
      const { mode } = await validateStop(body.mode === undefined ? {} : { mode: body.mode })
      const principal = await resolvePrincipal(ctx, this.options.principal)
      const outcome = await this.control.stop(runId, { principal, via: 'admin', admin: true }, mode)
      said = outcome.status
    } catch (error) {
      if (!(error instanceof AgentStreamException)) throw error
      said = String(error.code)
    }
    return ctx.response
      .redirect()
      .status(303)
      .toPath(
        `${this.options.base}/admin/runs/${encodeURIComponent(runId)}?stopped=${encodeURIComponent(said)}`
      )
  }
}
