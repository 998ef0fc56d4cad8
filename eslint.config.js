import { configPkg } from '@adonisjs/eslint-config'

export default configPkg(
  { ignores: ['build/**', 'tests/tmp/**', 'bench/tmp/**', 'demo/tmp/**', '.adonisjs/**'] },
  {
    // Tests read `(await iterator.next()).value` on purpose: one step of a stream per line.
    files: ['tests/**/*.ts'],
    rules: { '@unicorn/no-await-expression-member': 'off' },
  }
)
