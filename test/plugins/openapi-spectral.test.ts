// openapi.yaml against Spectral's OpenAPI rules and the OWASP API Security ruleset, as
// configured by .spectral.yaml: no errors. The CLI is spawned (about 3 s each) rather than
// embedded, so the test sees exactly what `npx spectral lint openapi.yaml` shows a person.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse, stringify } from 'yaml'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const RULESET = '.spectral.yaml'
const SPECTRAL = join(dirname(createRequire(import.meta.url).resolve('@stoplight/spectral-cli/package.json')), 'dist/index.js')

interface Finding {
  code: string
  message: string
  path: Array<string | number>
  severity: number
  range: { start: { line: number } }
}

/** Spectral's findings on `document` (relative to `cwd`), linted with `cwd`'s .spectral.yaml. */
function lint (cwd: string, document: string): Promise<Finding[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SPECTRAL, 'lint', document, '--ruleset', RULESET, '--format', 'json', '--quiet', '--fail-severity', 'hint'],
      { cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        // Exit 1 only says there were findings; anything else (a bad ruleset) prints no JSON.
        try {
          resolve(JSON.parse(stdout) as Finding[])
        } catch {
          reject(new Error(`spectral failed (${err?.message ?? 'no JSON'}): ${stderr}${stdout}`))
        }
      })
  })
}

const where = (f: Finding) => f.path.join('.')
const describe = (f: Finding) => `${f.code} at ${where(f)} (line ${f.range.start.line + 1}): ${f.message}`

t.test('openapi.yaml has no Spectral errors (spectral:oas + OWASP, .spectral.yaml)', async (t) => {
  const findings = await lint(ROOT, 'openapi.yaml')
  const errors = findings.filter((f) => f.severity === 0)
  const warnings = findings.filter((f) => f.severity === 1)
  const perRule = new Map<string, number>()
  for (const w of warnings) perRule.set(w.code, (perRule.get(w.code) ?? 0) + 1)
  t.comment(`${errors.length} errors, ${warnings.length} warnings, ${findings.length - errors.length - warnings.length} infos and hints`)
  for (const [code, count] of perRule) t.comment(`  ${count} × ${code}`)
  t.same(errors.map(describe), [], 'no Spectral errors: fix the route schemas, run `npm run openapi`, or justify an exemption in .spectral.yaml')
})

t.test('.spectral.yaml exempts only what it says', async (t) => {
  // A copy of the document in a directory of its own, with the same configuration: the
  // overrides name `openapi.yaml` relative to the ruleset, and the ruleset resolves
  // its packages from beside itself.
  const dir = await mkdtemp(join(tmpdir(), 'spectral-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  await writeFile(join(dir, RULESET), await readFile(join(ROOT, RULESET)))

  const document = parse(await readFile(join(ROOT, 'openapi.yaml'), 'utf8'))
  const header = (schema: object) => ({ description: 'A rate-limit header', schema })
  const counter = header({ type: 'integer', format: 'int64', minimum: 0, maximum: 1_000_000_000 })
  const field = header({ type: 'string', maxLength: 200 })
  const bothGenerations = {
    'RateLimit-Limit': counter,
    'RateLimit-Remaining': counter,
    'RateLimit-Reset': counter,
    RateLimit: field,
    'RateLimit-Policy': field
  }
  const products = document.paths['/external/v1/products'].get
  products.responses['200'].headers = bothGenerations
  const { 'RateLimit-Policy': _policy, ...firstGenerationOnly } = bothGenerations
  products.responses['400'].headers = firstGenerationOnly
  delete products.responses['401'].headers
  // A key-less /external/v1 read: the probes' exemption must not cover it.
  document.paths['/external/v1/products/{id}'].get.security = []
  // An unbounded string in each probe's answer: the probes are exempt from some rules only.
  for (const probe of ['/healthz', '/readyz']) {
    document.paths[probe].get.responses['200'].content['application/json'].schema.properties.unbounded = { type: 'string' }
  }
  await writeFile(join(dir, 'openapi.yaml'), stringify(document))

  const findings = await lint(dir, 'openapi.yaml')
  const at = (code: string, prefix: string) => findings.filter((f) => f.code === code && where(f).startsWith(prefix))

  const rateLimit = 'storefront-rate-limit-headers'
  t.same(at(rateLimit, 'paths./external/v1/products.get.responses.200').map(describe), [],
    'a response declaring both header generations, as the service sends them, passes (the upstream rule would reject it)')
  t.match(at(rateLimit, 'paths./external/v1/products.get.responses.400').map(describe), [/RateLimit-Policy/],
    'a response without RateLimit-Policy is an error')
  t.equal(at(rateLimit, 'paths./external/v1/products.get.responses.401').length, 1, 'a response without headers is an error')
  t.equal(at('owasp:api4:2023-rate-limit', 'paths.').length, 0, 'the upstream rate-limit rule is off')

  for (const probe of ['/healthz', '/readyz']) {
    const exempt = ['owasp:api2:2023-read-restricted', 'owasp:api8:2023-define-error-responses-401',
      'owasp:api8:2023-define-error-validation', 'owasp:api4:2023-rate-limit-responses-429', rateLimit]
    t.same(exempt.flatMap((code) => at(code, `paths.${probe}.`)).map(describe), [], `${probe} is exempt from the key, input and rate-limit rules`)
    t.equal(at('owasp:api4:2023-string-limit', `paths.${probe}.get.responses.200.content.application/json.schema.properties.unbounded`).length, 1,
      `${probe} is still held to the other rules`)
  }
  t.equal(at('owasp:api2:2023-read-restricted', 'paths./external/v1/products/{id}.get').length, 1,
    'an /external/v1 read without a key is still flagged')
})
