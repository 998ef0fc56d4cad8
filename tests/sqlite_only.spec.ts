import { test } from '@japa/runner'
import { existsSync } from 'node:fs'
import { SQLITE_ONLY } from './sqlite_only.js'

test.group('Specs run once, on SQLite (tests/sqlite_only.ts)', () => {
  test('each entry is a spec file of the suite, with the reason the database cannot matter', ({
    assert,
  }) => {
    assert.isAbove(Object.keys(SQLITE_ONLY).length, 0)
    for (const [file, reason] of Object.entries(SQLITE_ONLY)) {
      assert.match(file, /^tests\/[a-z0-9_]+\.spec\.ts$/, file)
      assert.isTrue(existsSync(new URL(`../${file}`, import.meta.url)), `${file} exists`)
      assert.isAbove(reason.trim().length, 10, `${file} says why`)
    }
  })
})
