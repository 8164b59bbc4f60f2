// `node bin/storefront.js …` in a child process, as an operator runs it.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/storefront.js', import.meta.url))

export interface Result { code: number | null, stdout: string, stderr: string }

/**
 * The environment of a command run as an operator runs it: PATH and HOME, and what the test
 * run itself needs its children to keep (NODE_V8_COVERAGE: where c8 collects their coverage;
 * STOREFRONT_SOURCE: the sources, which the coverage maps to). Nothing else of the test
 * runner's (NODE_OPTIONS, DATABASE_URL…) leaks in.
 */
export function cleanEnv (env: Record<string, string> = {}): Record<string, string> {
  const kept: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
  for (const name of ['NODE_V8_COVERAGE', 'STOREFRONT_SOURCE']) {
    const value = process.env[name]
    if (value !== undefined) kept[name] = value
  }
  return { ...kept, ...env }
}

/** Runs the command with only `env` (and cleanEnv's) in its environment. */
export function runStorefront (env: Record<string, string>, args: string[], input = ''): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: cleanEnv({ LOG_LEVEL: 'warn', ...env }), stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input)
  })
}
