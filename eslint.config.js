import { configPkg } from '@adonisjs/eslint-config'

/** A process-level listener would hide an unhandled rejection from the whole suite (one process). */
const NO_PROCESS_LISTENER = {
  selector:
    "CallExpression[callee.object.name='process'][callee.property.name=/^(on|once|prependListener)$/][arguments.0.value=/^(unhandledRejection|uncaughtException)$/]",
  message:
    'No process-level unhandledRejection/uncaughtException listener in tests: await or catch the promise you expect to reject (docs/testing.md).',
}

export default configPkg(
  { ignores: ['build/**', 'tests/tmp/**', 'bench/tmp/**', 'demo/tmp/**', '.adonisjs/**'] },
  {
    // Tests read `(await iterator.next()).value` on purpose: one step of a stream per line.
    files: ['tests/**/*.ts'],
    rules: {
      '@unicorn/no-await-expression-member': 'off',
      'no-restricted-syntax': ['error', NO_PROCESS_LISTENER],
    },
  }
)
