import { test } from '@japa/runner'
import {
  APPROVAL_RESPONSE_SCHEMA,
  parseApprovalReply,
  questionSetSchema,
  validateReplyPayload,
} from '../src/agui/translate/schemas.js'

test.group('Reply schemas: the advertised schema is the server check', () => {
  test('approval replies', ({ assert }) => {
    const ok = (payload: unknown) => validateReplyPayload(APPROVAL_RESPONSE_SCHEMA, payload)
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
    assert.deepEqual(parseApprovalReply({ approved: true }), { approved: true })
    assert.isNull(parseApprovalReply({ approved: 1 }))
  })

  test('question set replies', ({ assert }) => {
    const schema = questionSetSchema({
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
    })
    const ok = (payload: unknown) => validateReplyPayload(schema, payload)
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

  test('a schema that is not one of ours is refused, not passed', ({ assert }) => {
    assert.throws(() => validateReplyPayload({ type: 'string', pattern: '^a' }, 'a'))
  })
})
