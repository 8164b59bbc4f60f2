// The documents hold to the code and to each other: every relative link (and #anchor) in
// README.md, docs/*.md and bench/README.md resolves; every setting of config.ts has exactly
// one row in the configuration table, with its default; every path docs/architecture.md names
// in backticks exists; every error code of errors.ts is in the integrators' table with its
// status. Each check is a function, also run on a broken sample, so a check that could no
// longer fail is seen.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ConfigSchema } from '../../config.ts'
import { ERRORS } from '../../errors.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Repository-relative path → text. */
type Documents = Map<string, string>

function readDocuments (): Documents {
  const paths = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
  return new Map(paths.map((path) => [path, readFileSync(join(ROOT, path), 'utf8')]))
}

const existsInRepository = (path: string) => existsSync(join(ROOT, path))

/**
 * The text with its fenced code blocks emptied (a `# comment` in a shell block is no heading,
 * a `[x](y)` in code no link), its lines where they were.
 */
function prose (text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, (block) => block.replace(/[^\n]/g, ''))
}

/** Inline code spans blanked out, so what they hold is not read as markdown. */
const withoutCode = (line: string) => line.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length))

/** The anchors a markdown text offers: its headings as GitHub slugs them, and explicit ids. */
function anchorsOf (text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const [, heading] of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]*>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  for (const [, id] of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id!)
  return anchors
}

/** Every relative link of the documents that names no file, or no heading in it. */
function linkProblems (documents: Documents, exists: (path: string) => boolean): string[] {
  const problems: string[] = []
  const textOf = (path: string) => documents.get(path) ?? (exists(path) ? readFileSync(join(ROOT, path), 'utf8') : '')
  for (const [document, text] of documents) {
    const lines = prose(text).split('\n')
    lines.forEach((line, index) => {
      for (const [, target] of withoutCode(line).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue
        const where = `${document}:${index + 1}: ${target}`
        const [file, anchor] = target!.split('#') as [string, string | undefined]
        const path = file === '' ? document : normalize(join(dirname(document), decodeURIComponent(file)))
        if (path.startsWith('..')) {
          problems.push(`${where}: leaves the repository`)
        } else if (!exists(path)) {
          problems.push(`${where}: no such file`)
        } else if (anchor !== undefined) {
          if (!path.endsWith('.md')) problems.push(`${where}: an anchor into a file that is not markdown`)
          else if (!anchorsOf(textOf(path)).has(anchor)) problems.push(`${where}: no such heading in ${path}`)
        }
      }
    })
  }
  return problems
}

/** The header of the configuration table: a table with it lists settings, one a row. */
const CONFIGURATION_HEADER = /^\|\s*setting\s*\|\s*default\s*\|\s*meaning\s*\|\s*$/

/** A setting's default as the table writes it: `value`, "unset" (optional, none) or "empty". */
function documentedDefault (schema: { default?: unknown }): string {
  if (schema.default === undefined) return 'unset'
  if (schema.default === '') return 'empty'
  return `\`${String(schema.default)}\``
}

/**
 * Every setting must have exactly one row naming it, in any table of any document, and that
 * row must be in a configuration table with the setting's default; a configuration table's
 * every row must name a setting.
 */
function configurationProblems (documents: Documents, settings: Record<string, { default?: unknown }>): string[] {
  const problems: string[] = []
  const rows = new Map<string, string[]>()
  for (const [document, text] of documents) {
    let inConfiguration = false
    prose(text).split('\n').forEach((line, index) => {
      const where = `${document}:${index + 1}`
      if (!line.startsWith('|')) {
        inConfiguration = false
        return
      }
      if (CONFIGURATION_HEADER.test(line)) {
        inConfiguration = true
        return
      }
      const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim())
      if (cells.every((cell) => /^:?-+:?$/.test(cell))) return
      const name = /^`([A-Z][A-Z0-9_]*)`$/.exec(cells[0] ?? '')?.[1]
      if (name === undefined || !(name in settings)) {
        if (inConfiguration) problems.push(`${where}: a row of the configuration table names no setting of config.ts: ${cells[0]}`)
        return
      }
      rows.set(name, [...(rows.get(name) ?? []), where])
      if (!inConfiguration) {
        problems.push(`${where}: ${name} has a row outside the configuration table`)
      } else if (cells[1] !== documentedDefault(settings[name]!)) {
        problems.push(`${where}: ${name}'s default is ${documentedDefault(settings[name]!)} in config.ts, ${cells[1]} here`)
      }
    })
  }
  for (const name of Object.keys(settings)) {
    const where = rows.get(name) ?? []
    if (where.length === 0) problems.push(`${name} is not documented: give it a row in the configuration table (docs/operators.md)`)
    if (where.length > 1) problems.push(`${name} is documented ${where.length} times: ${where.join(', ')}`)
  }
  return problems
}

/** The folders git ignores at the root (build output, the embedded database): named, never present in a clone. */
function ignoredFolders (): Set<string> {
  const text = readFileSync(join(ROOT, '.gitignore'), 'utf8')
  return new Set(text.split('\n').map((l) => l.trim()).filter((l) => /^[\w.-]+\/$/.test(l)).map((l) => l.slice(0, -1)))
}

/** The file and folder paths a document names in backticks (`services/stock.ts`, `db/`, `app.ts`). */
function namedPaths (text: string): string[] {
  const paths = new Set<string>()
  for (const line of prose(text).split('\n')) {
    for (const [, span] of line.matchAll(/`([^`\s]+)`/g)) {
      // A scoped package (`@fastify/swagger`) is no path.
      if (!/^[\w.+-]+(\/[\w.+@-]+)*\/?$/.test(span!)) continue
      if (span!.includes('/') || /\.(ts|js|json|ya?ml|md|sh|conf|patch|sql)$/.test(span!)) paths.add(span!)
    }
  }
  return [...paths]
}

function missingPaths (text: string, exists: (path: string) => boolean, ignored: Set<string>): string[] {
  return namedPaths(text).filter((path) => !ignored.has(path.split('/')[0]!) && !exists(path.replace(/\/$/, '')))
}

/** The error codes missing from a `| status | code | when |` table, or shown with another status. */
function errorCodeProblems (text: string, errors: Record<string, { status: number }>): string[] {
  const shown = new Map<string, string>()
  for (const [, status, codes] of prose(text).matchAll(/^\|\s*(\d{3})\s*\|([^|]*)\|/gm)) {
    for (const [, code] of codes!.matchAll(/`([a-z_]+)`/g)) shown.set(code!, status!)
  }
  return Object.entries(errors).flatMap(([code, { status }]) => {
    const at = shown.get(code)
    if (at === undefined) return [`${code} is not in the table of errors`]
    return at === String(status) ? [] : [`${code} is shown as ${at}, answers ${status}`]
  })
}

const settings = ConfigSchema.properties as Record<string, { default?: unknown }>

t.test('every relative link and anchor resolves', async (t) => {
  const documents = readDocuments()
  t.ok(documents.has('docs/integrators.md') && documents.has('docs/operators.md') && documents.has('docs/architecture.md'), 'the guides are there')
  t.strictSame(linkProblems(documents, existsInRepository), [])
})

t.test('every setting of config.ts has exactly one row in the configuration table, with its default', async (t) => {
  t.ok(Object.keys(settings).length > 50, 'the settings are read from the schema')
  t.strictSame(configurationProblems(readDocuments(), settings), [])
})

t.test('every path docs/architecture.md names exists', async (t) => {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')
  const paths = namedPaths(text)
  t.ok(paths.length > 100, `the file lists are read (${paths.length} paths)`)
  for (const floor of ['bin/', 'cli/', 'routes/', 'plugins/', 'services/', 'db/', 'lib/', 'schemas/']) {
    t.ok(paths.some((p) => p.startsWith(floor)), `files of ${floor} are listed`)
  }
  t.strictSame(missingPaths(text, existsInRepository, ignoredFolders()), [])
})

t.test('every error code is in the integrators\' table of errors, with its status', async (t) => {
  t.strictSame(errorCodeProblems(readFileSync(join(ROOT, 'docs/integrators.md'), 'utf8'), ERRORS), [])
})

t.test('each check finds what is broken', async (t) => {
  const documents: Documents = new Map([
    ['README.md', '# Title\n\n[ok](docs/a.md#a-b) [gone](docs/nothing.md) [no heading](docs/a.md#nowhere) [self](#title)\n\n```sh\n[not a link](nowhere.md)\n```\n'],
    ['docs/a.md', '# A: b\n\n[up](../README.md#title) [out](../../elsewhere.md)\n\n| setting | default | meaning |\n|---|---|---|\n| `PORT` | `3000` | port |\n| `HOST` | `0.0.0.0` | where |\n| `GONE_SETTING` | `1` | stale |\n\n| url | for |\n|---|---|\n| `PORT` | again |\n']
  ])
  const exists = (path: string) => documents.has(path)
  t.strictSame(linkProblems(documents, exists), [
    'README.md:3: docs/nothing.md: no such file',
    'README.md:3: docs/a.md#nowhere: no such heading in docs/a.md',
    'docs/a.md:3: ../../elsewhere.md: leaves the repository'
  ])
  t.strictSame(configurationProblems(documents, { PORT: { default: 3000 }, HOST: { default: '127.0.0.1' }, DATA_DIR: { default: './data' } }), [
    'docs/a.md:8: HOST\'s default is `127.0.0.1` in config.ts, `0.0.0.0` here',
    'docs/a.md:9: a row of the configuration table names no setting of config.ts: `GONE_SETTING`',
    'docs/a.md:13: PORT has a row outside the configuration table',
    'PORT is documented 2 times: docs/a.md:7, docs/a.md:13',
    'DATA_DIR is not documented: give it a row in the configuration table (docs/operators.md)'
  ])
  const architecture = 'The `services/stock.ts` and `db/`, `servics/stock.ts`, `gone/`, `gone.ts`, `dist/cli/main.js` (ignored: built); not paths: `/external/v1`, `@fastify/swagger`, `Database.snapshot`, `a b/c`.\n```\n`nor/in/code.ts`\n```\n'
  t.strictSame(missingPaths(architecture, existsInRepository, new Set(['dist'])), ['servics/stock.ts', 'gone/', 'gone.ts'])
  t.strictSame(errorCodeProblems('| status | code | when |\n|---|---|---|\n| 400 | `a_code`, `b_code` | x |\n| 404 | `c_code` | y |\n', { a_code: { status: 400 }, b_code: { status: 409 }, c_code: { status: 404 }, d_code: { status: 500 } }), [
    'b_code is shown as 400, answers 409',
    'd_code is not in the table of errors'
  ])
  t.strictSame(documentedDefault({}), 'unset')
  t.strictSame(documentedDefault({ default: '' }), 'empty')
  t.strictSame(documentedDefault({ default: false }), '`false`')
})
