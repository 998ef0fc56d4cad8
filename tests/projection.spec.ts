import { test } from '@japa/runner'
import { FrameTranslator } from '../src/agui/translate/index.js'
import type { AgUiEventRecord } from '../src/agui/translate/types.js'
import { FAILURE_SENTENCES, type StreamFrame } from '../src/core/frames.js'
import { TOOL_FAILED_SENTENCE, publicFrame, type ProjectionRules } from '../src/core/projection.js'

const event = (e: Record<string, unknown>) => ({ t: 'event', event: e }) as StreamFrame

/** What the AG-UI door sends for `frames` under `rules` (one segment, closed). */
function agui(frames: StreamFrame[], rules: ProjectionRules = {}): AgUiEventRecord[] {
  const translator = new FrameTranslator({ streamRunId: 'run-1', ...rules })
  const run = { threadId: 't', runId: 'run-1' }
  const out: AgUiEventRecord[] = translator.open(run)
  frames.forEach((frame, i) => out.push(...translator.push(frame, { seq: i + 1 })))
  out.push(...translator.close(run))
  return out
}

test.group('Public projection (src/core/projection.ts)', () => {
  test('error: the code fixed sentence, never the thrown text', ({ assert }) => {
    const frame: StreamFrame = { t: 'error', code: 'quota_exceeded', message: 'db.ts:12 key=sk' }
    assert.deepEqual(publicFrame(frame, {}), {
      t: 'error',
      code: 'quota_exceeded',
      message: FAILURE_SENTENCES.quota_exceeded,
    })
    assert.equal(frame.message, 'db.ts:12 key=sk', 'the stored frame is not mutated')
  })

  test('tool-output-error: a fixed sentence unless toolErrorText', ({ assert }) => {
    const frame = event({ kind: 'tool-output-error', id: 'c1', error: { stack: 'ECONNREFUSED' } })
    assert.deepEqual(
      publicFrame(frame, {}),
      event({ kind: 'tool-output-error', id: 'c1', error: TOOL_FAILED_SENTENCE })
    )
    assert.deepEqual(publicFrame(frame, { toolErrorText: true }), frame)
  })

  test('reasoning: dropped unless reasoning', ({ assert }) => {
    const frame = event({ kind: 'reasoning', text: 'secret plan' })
    assert.isNull(publicFrame(frame, {}))
    assert.deepEqual(publicFrame(frame, { reasoning: true }), frame)
  })

  test('approval-settled: who decided stays on the server', ({ assert }) => {
    const frame = event({
      kind: 'approval-settled',
      id: 'c1',
      status: 'approved',
      decidedBy: 'alice',
      decidedVia: 'agui',
    })
    assert.deepEqual(
      publicFrame(frame, {}),
      event({ kind: 'approval-settled', id: 'c1', status: 'approved', decidedVia: 'agui' })
    )
  })

  test('step-finish usage: finite numbers only', ({ assert }) => {
    const frame = event({
      kind: 'step-finish',
      usage: {
        inputTokens: 3,
        outputTokens: 4,
        raw: { provider: 'x' },
        cost: Number.NaN,
        note: 'n',
      },
      costUsd: null,
    })
    assert.deepEqual(
      publicFrame(frame, {}),
      event({ kind: 'step-finish', usage: { inputTokens: 3, outputTokens: 4 }, costUsd: null })
    )
  })

  test('known kinds keep their own fields only', ({ assert }) => {
    assert.deepEqual(
      publicFrame(event({ kind: 'title', title: 'T', secret: 'x' }), {}),
      event({ kind: 'title', title: 'T' })
    )
    assert.deepEqual(
      publicFrame(event({ kind: 'step-start', principal: 'p' }), {}),
      event({ kind: 'step-start' })
    )
  })

  test('unknown kinds: dropped unless allow-listed, then the listed fields only', ({ assert }) => {
    const frame = event({ kind: 'secret-kind', data: 'sk-live', shown: 1 })
    assert.isNull(publicFrame(frame, {}))
    assert.deepEqual(
      publicFrame(frame, { custom: { 'secret-kind': ['shown'] } }),
      event({ kind: 'secret-kind', shown: 1 })
    )
  })

  test('other frames pass as they are', ({ assert }) => {
    const frame: StreamFrame = { t: 'text', v: 'hi' }
    assert.strictEqual(publicFrame(frame, {}), frame)
  })

  test('native and AG-UI agree: what one leaves out the other leaves out', ({ assert }) => {
    const rules: ProjectionRules = { custom: { title: ['title'], progress: ['pct'] } }
    const frames: StreamFrame[] = [
      event({ kind: 'step-start' }),
      event({ kind: 'reasoning', text: 'secret plan' }),
      event({
        kind: 'tool-input-available',
        id: 'c1',
        name: 'search',
        input: {},
        toolKind: 'read',
      }),
      event({ kind: 'tool-output-error', id: 'c1', error: 'ECONNREFUSED' }),
      event({ kind: 'approval-settled', id: 'c1', status: 'approved', decidedBy: 'alice' }),
      event({ kind: 'secret-kind', data: 'sk-live' }),
      event({ kind: 'progress', pct: 50, token: 'hunter2' }),
      event({ kind: 'title', title: 'Trip', owner: 'bob' }),
      event({ kind: 'step-finish', usage: { inputTokens: 2, meta: { key: 'k' } } }),
    ]
    const native = JSON.stringify(frames.map((f) => publicFrame(f, rules)).filter(Boolean))
    const wire = agui(frames, rules)
    for (const secret of [
      'secret plan',
      'ECONNREFUSED',
      'alice',
      'sk-live',
      'hunter2',
      'bob',
      '"k"',
    ]) {
      assert.notInclude(native, secret)
      assert.notInclude(JSON.stringify(wire), secret)
    }
    const customs = wire.filter((e) => e.type === 'CUSTOM').map((e) => [e.name, e.value])
    assert.deepEqual(customs, [
      ['progress', { pct: 50 }],
      ['title', { title: 'Trip' }],
      ['agent_stream.run_state', { title: 'Trip', steps: 1, usage: { inputTokens: 2 } }],
    ])
    const result = wire.find((e) => e.type === 'TOOL_CALL_RESULT')
    assert.equal(result?.content, TOOL_FAILED_SENTENCE)
    assert.notInclude(
      wire.map((e) => e.type),
      'STATE_SNAPSHOT'
    )
  })

  test('native and AG-UI agree on a failed run: the same fixed sentence', ({ assert }) => {
    const frame: StreamFrame = { t: 'error', code: 'replay_diverged', message: 'at x.ts' }
    const native = publicFrame(frame, {}) as Extract<StreamFrame, { t: 'error' }>
    const error = agui([frame]).find((e) => e.type === 'RUN_ERROR')
    assert.equal(error?.message, native.message)
    assert.equal(error?.code, native.code)
  })
})
