// One linter: neostandard (standard style for modern JS/TS), with TypeScript support.
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'scratch/**', 'node_modules/**'] }),
  {
    rules: {
      // A TypeBox schema and its static type share a name on purpose: `type X = Static<typeof X>`.
      '@typescript-eslint/no-redeclare': 'off'
    }
  }
]
