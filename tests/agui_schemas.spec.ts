import { test } from '@japa/runner'
import type { ElicitationRequest } from '../src/core/frames.js'
import { replyCheck } from '../src/agui/door/reply_check.js'

test.group('Reply checks: a resume payload meets exactly the advertised responseSchema', () => {
  test('approval replies', ({ assert }) => {
    const ok = (payload: unknown) => replyCheck.approval(payload) !== null
    assert.isTrue(ok({ approved: true }))
    assert.isTrue(ok({ approved: false, reason: 'no', editedArgs: { q: 1 } }))
    assert.isFalse(ok({}), 'approved is required')
    assert.isFalse(ok({ approved: 'yes' }))
    assert.isFalse(ok({ approved: true, extra: 1 }), 'additionalProperties: false')
    assert.isFalse(ok({ approved: true, reason: 'x'.repeat(2001) }), 'maxLength')
    assert.isTrue(ok({ approved: true, reason: '😀'.repeat(2000) }), 'characters, not UTF-16 units')
    assert.isFalse(ok({ approved: true, editedArgs: [] }), 'an array is not an object')
    assert.isFalse(ok({ approved: true, editedArgs: null }))
    assert.isFalse(ok(null))
    assert.isFalse(ok([{ approved: true }]))
    assert.deepEqual(replyCheck.approval({ approved: true }), { approved: true })
    assert.isNull(replyCheck.approval({ approved: 1 }))
  })

  test('question set replies', ({ assert }) => {
    const request: ElicitationRequest = {
      id: 'q',
      source: 'ask',
      questions: [
        { id: 'city', prompt: 'Where?', options: [{ value: 'paris', label: 'Paris' }] },
        {
          id: 'tags',
          prompt: 'Tags?',
          multiple: true,
          allowFreeText: true,
          defaults: ['a'],
          options: [{ value: 'a', label: 'A' }],
        },
      ],
    }
    const ok = (payload: unknown) => replyCheck.questionSet(request, payload)
    assert.isTrue(ok({ answers: { city: ['paris'], tags: ['a', 'free text'] } }))
    assert.isTrue(ok({ answers: {}, skipped: true }))
    assert.isTrue(ok({}))
    assert.isFalse(ok({ answers: { city: ['rome'] } }), 'enum')
    assert.isFalse(ok({ answers: { city: ['paris', 'paris'] } }), 'maxItems')
    assert.isFalse(ok({ answers: { city: 'paris' } }), 'an array')
    assert.isFalse(ok({ answers: { other: ['x'] } }), 'additionalProperties: false')
    assert.isFalse(ok({ answers: {}, skipped: 'yes' }))
    assert.isFalse(ok({ answers: {}, extra: true }))
  })
})
