import { test } from '@japa/runner'
import { DateTime } from 'luxon'
import type { StreamFrame } from '../src/core/frames.js'
import { renderTimeline, svgText, timelineModel } from '../src/http/admin/timeline.js'
import type { ParkedItem } from '../src/parking/types.js'
import { APPENDED_END, type StoredRow } from '../src/store/rows.js'
import type { RunInspection } from '../src/inspection/index.js'

const T0 = 1_700_000_000_000
const iso = (ms: number) => DateTime.fromMillis(ms).toUTC().toISO()!

/** A inspection from rows given as `[at, frame | 'end' | 'appended' | text]`. */
function inspection(
  rows: [number, StreamFrame | 'end' | 'appended' | string][],
  parked: ParkedItem[] = [],
  status: 'open' | 'ended' | 'failed' = 'ended'
): RunInspection {
  const stored: StoredRow[] = rows.map(([at, value], index) => {
    const base = { seq: index + 1, componentId: null, superseded: false, createdAt: T0 + at }
    if (value === 'end') return { ...base, kind: 'end', body: '' }
    if (value === 'appended') return { ...base, kind: 'end', body: APPENDED_END }
    if (typeof value === 'string') return { ...base, kind: 'text', body: value }
    return { ...base, kind: value.t, body: JSON.stringify(value) }
  })
  const last = T0 + (rows.at(-1)?.[0] ?? 0)
  return {
    head: {
      runId: 'run-1',
      lastSeq: stored.length,
      rev: 1,
      status,
      leaseExpiresAt: null,
      createdAt: T0,
      updatedAt: last,
      endedAt: status === 'open' ? null : last,
    },
    rows: stored,
    parked,
  }
}

const approval = (runId: string, itemId: string, asked: number, decided: number | null) =>
  ({
    kind: 'approval',
    runId,
    itemId,
    park: 1,
    streamRunId: 'run-1',
    streamSeq: 1,
    threadId: 'run-1',
    approver: 'requester',
    requesterId: 'alice',
    expiresAt: null,
    createdAt: iso(T0 + asked),
    status: decided === null ? 'pending' : 'approved',
    toolName: 'send_email',
    decidedBy: decided === null ? null : 'bob',
    decidedVia: decided === null ? null : 'chat',
    decidedAt: decided === null ? null : iso(T0 + decided),
  }) satisfies ParkedItem

const event = (e: any): StreamFrame => ({ t: 'event', event: e })

test.group('Timeline: reading a inspection', () => {
  test('segments end at segment ends, not at appended ends; a parked sub-agent scope re-opens on resume', ({
    assert,
  }) => {
    const model = timelineModel(
      inspection(
        [
          [0, 'Hi. '],
          [10, event({ kind: 'subagent-start', runId: 'run-1.sub', name: 'helper' })],
          [20, { t: 'approval', runId: 'run-1.sub', id: 'c1', toolName: 'send_email', input: {} }],
          [30, 'end'],
          [500, event({ kind: 'approval-settled', id: 'c1', status: 'approved' })],
          [500, 'appended'],
          [600, 'Sending. '],
          [650, event({ kind: 'subagent-finish', runId: 'run-1.sub', status: 'failed' })],
          [700, 'end'],
        ],
        [approval('run-1.sub', 'c1', 20, 500)]
      )
    )
    assert.deepEqual(
      model.segments.map((s) => [s.from - T0, s.to - T0]),
      [
        [0, 30],
        [600, 700],
      ]
    )
    const sub = model.lanes.find((lane) => lane.runId === 'run-1.sub')!
    assert.equal(sub.name, 'helper')
    assert.deepEqual(
      sub.spans.map((s) => [s.from - T0, s.to - T0]),
      [
        [10, 30],
        [600, 650],
      ]
    )
    assert.deepEqual(
      sub.parks.map((p) => p.itemId),
      ['c1']
    )
    assert.deepEqual(
      sub.marks.map((m) => [m.at - T0, m.label]),
      [[650, 'sub-agent failed']]
    )
    assert.equal(model.end - T0, 700)
  })

  test('a running run has an open segment; a dead writer is a failure; a pending park waits to the end', ({
    assert,
  }) => {
    const running = timelineModel(
      inspection(
        [
          [0, 'Hi'],
          [40, 'there'],
        ],
        [],
        'open'
      )
    )
    assert.deepEqual(
      running.segments.map((s) => s.open),
      [true]
    )
    const dead = timelineModel(
      inspection(
        [
          [0, 'Hi'],
          [5, 'end'],
        ],
        [],
        'failed'
      )
    )
    assert.deepEqual(
      dead.lanes[0].marks.map((m) => m.label),
      ['failed: the writer stopped']
    )
    const svg = renderTimeline(
      inspection(
        [
          [0, { t: 'approval', runId: 'run-1', id: 'c', toolName: 'x', input: {} }],
          [1, 'end'],
        ],
        [approval('run-1', 'c', 0, null)]
      )
    )
    assert.include(svg, 'class="park pending"')
    assert.lengthOf(svg.match(/class="decision"/g)!, 1, "no decision mark but the legend's")
  })

  test('svg text: escaped, bidi controls shown as markers, cut by code points', ({ assert }) => {
    assert.equal(svgText('<a href="x">&</a>'), '&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;')
    assert.equal(svgText('a\u202Eb\u2066c'), 'a[U+202E]b[U+2066]c')
    assert.equal(svgText('😀😀😀😀', 3), '😀😀…')
  })
})
