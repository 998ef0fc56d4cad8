import { DateTime, Duration } from 'luxon'
import type { StreamFrame } from '../../core/frames.js'
import { APPENDED_END } from '../../store/rows.js'
import type { RunInspection } from '../../inspection/index.js'
import type { ParkedItem } from '../../parking/types.js'
import { e, plain } from './layout.js'

/**
 * The timeline of a run, PURE (no I/O, no clock): its inspection (`src/inspection/`, what
 * `agent-stream:inspect` prints) in, an inline SVG string out. One lane for the run, one per
 * sub-agent; bars for the segments (the run's) and the sub-agents' scopes, amber blocks for the
 * parks (asked -> decided), a mark for each decision with who decided, how and how long the
 * wait took, red crosses for failures. Every value is escaped and its bidi controls shown as
 * visible `[U+202E]` markers; long values are cut (the whole value stays in the `<title>`).
 */

/** A span of time on a lane, epoch milliseconds. */
interface Span {
  from: number
  to: number
  open?: boolean
}

interface Mark {
  at: number
  label: string
  kind: 'failure' | 'cancel'
}

interface Lane {
  runId: string
  name: string
  spans: Span[]
  marks: Mark[]
  parks: ParkedItem[]
}

/** What the picture shows, derived from a inspection. Exported for tests of the reading. */
export interface TimelineModel {
  start: number
  end: number
  /** The run's segments: between two parks (the last one open while the run is running). */
  segments: Span[]
  /** The run's lane first, then one per sub-agent in the order they started. */
  lanes: Lane[]
}

const parse = (body: string): StreamFrame | null => {
  try {
    return JSON.parse(body) as StreamFrame
  } catch {
    return null
  }
}

const ms = (iso: string | null | undefined) =>
  iso ? DateTime.fromISO(iso, { zone: 'utc' }).toMillis() : null

/** Read a inspection into lanes, segments, parks and marks. */
export function timelineModel(inspection: RunInspection): TimelineModel {
  const { head, rows, parked } = inspection
  const main: Lane = { runId: head.runId, name: 'run', spans: [], marks: [], parks: [] }
  const lanes = new Map<string, Lane>([[head.runId, main]])
  const lane = (runId: string, name?: string) => {
    let found = lanes.get(runId)
    if (!found) {
      found = { runId, name: name ?? 'agent', spans: [], marks: [], parks: [] }
      lanes.set(runId, found)
    }
    return found
  }
  const segments: Span[] = []
  let time = head.createdAt
  let segmentStart: number | null = null
  /** Open sub-agent scopes, innermost last, with when each opened. */
  let scopes: { runId: string; from: number }[] = []
  /**
   * Scopes open when a segment ended (the sub-agent parked): a resumed child writes on in its
   * scope with no new `subagent-start` (the doors re-open it from the park), so the next
   * segment re-opens them.
   */
  let parkedScopes: string[] = []
  const closeScopes = (at: number) => {
    for (const scope of scopes) lane(scope.runId).spans.push({ from: scope.from, to: at })
    parkedScopes = scopes.map((scope) => scope.runId)
    scopes = []
  }
  for (const row of rows) {
    time = Math.max(time, row.createdAt ?? time)
    if (row.kind === 'end') {
      if (row.body === APPENDED_END) {
        // Frames appended to an ended stream (settlements while it was parked): no segment of
        // the run; the scopes it parked in stay parked.
        parkedScopes = scopes.map((scope) => scope.runId)
        scopes = []
      } else if (segmentStart !== null) {
        segments.push({ from: segmentStart, to: time })
        closeScopes(time)
      }
      segmentStart = null
      continue
    }
    if (segmentStart === null) {
      segmentStart = time
      scopes = parkedScopes.map((runId) => ({ runId, from: time }))
      parkedScopes = []
    }
    if (row.kind === 'text' || row.kind === 'data') continue
    const frame = parse(row.body)
    if (!frame) continue
    const current = scopes.at(-1)?.runId ?? head.runId
    if (frame.t === 'error') {
      main.marks.push({ at: time, label: `failed: ${frame.code}`, kind: 'failure' })
    } else if (frame.t === 'event') {
      const event = frame.event
      if (event.kind === 'subagent-start') {
        lane(event.runId, event.name)
        scopes.push({ runId: event.runId, from: time })
      } else if (event.kind === 'subagent-finish') {
        const at = scopes.findLastIndex((scope) => scope.runId === event.runId)
        if (at >= 0) {
          const [scope] = scopes.splice(at, 1)
          lane(scope.runId).spans.push({ from: scope.from, to: time })
        }
        if (event.status === 'failed') {
          lane(event.runId).marks.push({ at: time, label: 'sub-agent failed', kind: 'failure' })
        }
      } else if (event.kind === 'tool-output-error') {
        lane(current).marks.push({ at: time, label: `tool failed: ${event.id}`, kind: 'failure' })
      } else if (event.kind === 'cancelled') {
        main.marks.push({ at: time, label: 'cancelled', kind: 'cancel' })
      }
    }
  }
  let end = Math.max(time, head.updatedAt, head.endedAt ?? 0)
  for (const item of parked) end = Math.max(end, ms(item.decidedAt) ?? 0, ms(item.createdAt) ?? 0)
  if (segmentStart !== null) {
    // The run is still writing (or its writer died without an end): its segment is open.
    segments.push({ from: segmentStart, to: end, open: head.status === 'open' })
    for (const scope of scopes.splice(0)) {
      lane(scope.runId).spans.push({ from: scope.from, to: end, open: true })
    }
  }
  if (head.status === 'failed' && !main.marks.some((mark) => mark.kind === 'failure')) {
    main.marks.push({ at: end, label: 'failed: the writer stopped', kind: 'failure' })
  }
  for (const item of parked) lane(item.runId).parks.push(item)
  return { start: Math.min(head.createdAt, end), end, segments, lanes: [...lanes.values()] }
}

/** A duration for people: `850 ms`, `1.2 s`, `3 min, 5 sec`. */
export function humanDuration(millis: number): string {
  if (millis < 1000) return `${Math.max(0, Math.round(millis))} ms`
  if (millis < 60_000) return `${(millis / 1000).toFixed(1)} s`
  return Duration.fromMillis(Math.round(millis / 1000) * 1000)
    .rescale()
    .toHuman({ unitDisplay: 'short' })
}

/** A clock time for people (UTC, to the millisecond). */
export const clock = (millis: number) =>
  DateTime.fromMillis(millis, { zone: 'utc' }).toFormat('HH:mm:ss.SSS')

/**
 * Text for SVG: cut to `max` code points (a `…` says so), escaped, each bidi control shown as
 * a visible marker (SVG text has no `<bdi>`; the `<text>` carries `unicode-bidi="isolate"`).
 */
export function svgText(value: unknown, max = Number.POSITIVE_INFINITY): string {
  const points = Array.from(String(value ?? ''))
  const cut = points.length > max ? `${points.slice(0, max - 1).join('')}…` : points.join('')
  return plain(cut)
}

/** An id for SVG: its start and its end (where ids differ: a sub-agent's suffix), escaped. */
export function svgId(value: string, max: number): string {
  const points = Array.from(value)
  if (points.length <= max) return svgText(value)
  const tail = Math.ceil((max - 1) / 2)
  return svgText(`${points.slice(0, max - 1 - tail).join('')}…${points.slice(-tail).join('')}`)
}

/**
 * Who decided an item (by `name`, the console's display name; the id by default), how, and how
 * long it waited (or that it still waits).
 */
export function decisionText(
  item: ParkedItem,
  now?: number,
  name: (principalId: string) => string = (id) => id
): string {
  const asked = ms(item.createdAt)!
  const decided = ms(item.decidedAt)
  if (item.status === 'pending' || decided === null) {
    return now === undefined ? 'waiting' : `waiting for ${humanDuration(now - asked)}`
  }
  const who = item.decidedBy ? ` by ${name(item.decidedBy)}` : ''
  const via = item.decidedVia ? ` via ${item.decidedVia}` : ''
  return `${item.status}${who}${via} after ${humanDuration(decided - asked)}`
}

/** What an item asked: the tool, or the question set. */
export const itemLabel = (item: ParkedItem) =>
  item.kind === 'approval' ? `approve ${item.toolName ?? ''}` : `questions ${item.itemId}`

const WIDTH = 960
const LABELS = 180
const RIGHT = 24
const TOP = 34
const LANE = 90
const PLOT = WIDTH - LABELS - RIGHT
/** A label under a point: centred, or kept inside the plot near its edges. */
const anchorAt = (at: number) =>
  at > WIDTH - RIGHT - 140 ? 'end' : at < LABELS + 140 ? 'start' : 'middle'

/**
 * The SVG picture of a inspection (see the module's comment). `id` prefixes the element ids; `name`
 * gives a decider's display name (the id by default).
 */
export function renderTimeline(
  inspection: RunInspection,
  id = 'timeline',
  name?: (principalId: string) => string
): string {
  const model = timelineModel(inspection)
  const span = Math.max(1, model.end - model.start)
  const x = (at: number) =>
    LABELS + ((Math.min(Math.max(at, model.start), model.end) - model.start) / span) * PLOT
  const width = (from: number, to: number) => Math.max(3, x(to) - x(from))
  const f = (n: number) => n.toFixed(1)
  const height = TOP + model.lanes.length * LANE + 34
  const parks = model.lanes.reduce((n, lane) => n + lane.parks.length, 0)
  const failures = model.lanes.reduce(
    (n, lane) => n + lane.marks.filter((mark) => mark.kind === 'failure').length,
    0
  )
  const out: string[] = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-labelledby="${id}-title ${id}-desc">`,
    `<title id="${id}-title">Timeline of run ${svgText(inspection.head.runId)}</title>`,
    `<desc id="${id}-desc">${model.segments.length} segment(s), ${parks} park(s), ${model.lanes.length - 1} sub-agent lane(s), ${failures} failure(s), over ${humanDuration(model.end - model.start)}. The table below lists every park and decision.</desc>`
  )
  // The time axis: start, quarters, end.
  out.push(`<g class="axis">`)
  for (let q = 0; q <= 4; q++) {
    const at = model.start + (span * q) / 4
    const anchor = q === 0 ? 'start' : q === 4 ? 'end' : 'middle'
    const label = q === 0 ? `${clock(at)} UTC` : `+${humanDuration(at - model.start)}`
    out.push(
      `<line x1="${f(x(at))}" y1="${TOP - 8}" x2="${f(x(at))}" y2="${height - 30}" class="tick"/>`,
      `<text x="${f(x(at))}" y="${TOP - 14}" text-anchor="${anchor}" class="time">${svgText(label)}</text>`
    )
  }
  out.push(`</g>`)
  model.lanes.forEach((lane, index) => {
    const top = TOP + index * LANE
    const bar = top + 30
    const main = index === 0
    out.push(
      `<g class="lane${main ? ' main' : ' subagent'}" data-run="${svgText(lane.runId)}">`,
      `<title>${svgText(main ? `Run ${lane.runId}` : `Sub-agent ${lane.name} (${lane.runId})`)}</title>`,
      `<line x1="${LABELS}" y1="${bar + 7}" x2="${WIDTH - RIGHT}" y2="${bar + 7}" class="rail"/>`,
      `<text x="8" y="${bar + 4}" class="name" unicode-bidi="isolate">${svgText(main ? 'run' : lane.name, 22)}</text>`,
      `<text x="8" y="${bar + 20}" class="id" unicode-bidi="isolate">${svgId(lane.runId, 24)}</text>`
    )
    const spans = main ? model.segments : lane.spans
    spans.forEach((s, n) => {
      const what = main ? `Segment ${n + 1}` : `${lane.name} active`
      out.push(
        `<rect class="${main ? 'segment' : 'scope'}${s.open ? ' open' : ''}" x="${f(x(s.from))}" y="${bar}" width="${f(width(s.from, s.to))}" height="14" rx="3"><title>${svgText(`${what}: ${clock(s.from)} to ${s.open ? 'now' : clock(s.to)} UTC (${humanDuration(s.to - s.from)})`)}</title></rect>`
      )
    })
    lane.parks.forEach((item, n) => {
      const asked = ms(item.createdAt)!
      const decided = ms(item.decidedAt) ?? model.end
      const y = bar - 4 - (n % 2) * 4
      const text = `${itemLabel(item)}: ${decisionText(item, undefined, name)}`
      const reason = item.reason ? ` (reason: ${item.reason})` : ''
      out.push(
        `<g class="park ${e(item.status)}" data-item="${svgText(item.itemId)}">`,
        `<title>${svgText(`Parked ${clock(asked)} UTC: ${text}${reason}`)}</title>`,
        `<rect x="${f(x(asked))}" y="${y}" width="${f(width(asked, decided))}" height="22" rx="3"/>`,
        `<text x="${f(x(asked) + 2)}" y="${bar - 12 - (n % 2) * 12}" class="label" unicode-bidi="isolate">${svgText(itemLabel(item), 28)}</text>`
      )
      if (item.status !== 'pending') {
        out.push(
          `<path class="decision" d="M${f(x(decided))} ${bar + 18} l5 8 h-10 z"/>`,
          `<text x="${f(x(decided))}" y="${bar + 38 + (n % 2) * 13}" text-anchor="${anchorAt(x(decided))}" class="who" unicode-bidi="isolate">${svgText(decisionText(item, undefined, name), 44)}</text>`
        )
      }
      out.push(`</g>`)
    })
    for (const mark of lane.marks) {
      const cx = x(mark.at)
      out.push(
        `<g class="${mark.kind}"><title>${svgText(`${mark.label} at ${clock(mark.at)} UTC`)}</title>`,
        `<path d="M${f(cx - 6)} ${bar - 6} l12 12 m0 -12 l-12 12" class="cross"/>`,
        `<text x="${f(cx)}" y="${bar + 30}" text-anchor="${anchorAt(cx)}" class="mark" unicode-bidi="isolate">${svgText(mark.label, 30)}</text></g>`
      )
    }
    out.push(`</g>`)
  })
  // The legend.
  const legend = height - 14
  out.push(
    `<g class="legend">`,
    `<rect class="segment" x="${LABELS}" y="${legend - 10}" width="18" height="10"/><text x="${LABELS + 24}" y="${legend}">segment</text>`,
    `<rect class="scope" x="${LABELS + 110}" y="${legend - 10}" width="18" height="10"/><text x="${LABELS + 134}" y="${legend}">sub-agent</text>`,
    `<g class="park"><rect x="${LABELS + 230}" y="${legend - 10}" width="18" height="10"/></g><text x="${LABELS + 254}" y="${legend}">park (asked to decided)</text>`,
    `<path class="decision" d="M${LABELS + 430} ${legend - 10} l5 8 h-10 z"/><text x="${LABELS + 442}" y="${legend}">decision</text>`,
    `<g class="failure"><path class="cross" d="M${LABELS + 520} ${legend - 10} l10 10 m0 -10 l-10 10"/></g><text x="${LABELS + 538}" y="${legend}">failure</text>`,
    `</g></svg>`
  )
  return out.join('\n')
}
