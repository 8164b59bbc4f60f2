// One linter: neostandard (standard style for modern JS/TS), with TypeScript support, and
// the floors of the layout: an import never runs back up a floor.
import neostandard from 'neostandard'

// Top to bottom: cli/ and server.ts → app.ts → routes/ → plugins/ → services/ → db/ →
// lib/, schemas/, errors.ts, config.ts. Each floor may import the floors below it only.
const above = {
  entry: ['**/cli/**', '**/server.ts'],
  app: ['**/app.ts'],
  routes: ['**/routes/**'],
  plugins: ['**/plugins/**'],
  services: ['**/services/**'],
  db: ['**/db/**']
}
const floor = (files, ...higher) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [{
        group: higher.flatMap((name) => above[name]),
        message: `${files[0].split('/')[0]} must not import from a floor above it (${higher.join(', ')}): move the code down, or call it from above.`
      }]
    }]
  }
})

// The entry points call services, never SQL: of db/ they may use the connection (db/client.ts) only.
const entryPoints = {
  files: ['cli/**/*.ts', 'server.ts'],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [{
        group: ['**/db/*', '!**/db/client.ts'],
        message: 'Entry points call services, not db/ query modules: put the use case in services/.'
      }]
    }]
  }
}

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'scratch/**', 'node_modules/**', 'coverage/**'] }),
  {
    rules: {
      // A TypeBox schema and its static type share a name on purpose: `type X = Static<typeof X>`.
      '@typescript-eslint/no-redeclare': 'off'
    }
  },
  entryPoints,
  floor(['app.ts'], 'entry'),
  floor(['routes/**/*.ts'], 'entry', 'app'),
  floor(['plugins/**/*.ts'], 'entry', 'app', 'routes'),
  floor(['services/**/*.ts'], 'entry', 'app', 'routes', 'plugins'),
  floor(['db/**/*.ts'], 'entry', 'app', 'routes', 'plugins', 'services'),
  floor(['lib/**/*.ts', 'schemas/**/*.ts', 'errors.ts', 'config.ts'], 'entry', 'app', 'routes', 'plugins', 'services', 'db')
]
