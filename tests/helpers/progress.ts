import { writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import { Test } from '@japa/runner/core'
import type { PluginFn } from '@japa/runner/types'

/**
 * A Japa plugin that keeps `path` holding one line: where the run is now (the spec file, the
 * group, the test and its phase: group setup, test, test cleanup, group teardown) and since when.
 * `scripts/test_all.mjs` reads it when its watchdog kills a run that went past its bound, to name
 * what was running; the file is rewritten synchronously at each step, so it is right even when
 * the run's event loop is blocked.
 */
export function progressFile(path: string): PluginFn {
  return ({ emitter }) => {
    let file = ''
    let group = ''
    let test = ''
    const write = (phase: string) =>
      writeFileSync(
        path,
        JSON.stringify({ file, group, test, phase, since: new Date().toISOString() }) + '\n'
      )
    const fileOf = (meta: { fileName?: string } | undefined) =>
      meta?.fileName ? relative(process.cwd(), meta.fileName) : file
    emitter.on('group:start', (payload) => {
      file = fileOf(payload.meta)
      group = payload.title
      test = ''
      write('group setup')
    })
    emitter.on('group:end', () => {
      test = ''
      write('after the group')
      group = ''
    })
    emitter.on('test:start', (payload) => {
      file = fileOf(payload.meta)
      test = payload.title.expanded
      write('test')
    })
    // After the test's function returned (or timed out): its cleanup functions run next.
    Test.executed(() => write('test cleanup'))
    emitter.on('test:end', () => {
      write(group ? 'between tests or the group teardown' : 'between tests')
      test = ''
    })
  }
}
