// The `storefront` command (bin/storefront.js runs it): serve, migrate, and the operator's
// catalogue, key, maintenance, settings, order and webhook commands. Every subcommand with
// --json prints one JSON document on stdout and nothing else there; problems go to stderr as
// one line, and the exit code says whose they are to fix.
import { CommanderError } from 'commander'
import { ApiError } from '../errors.ts'
import { CommandLineError, UsageError } from './context.ts'
import { buildProgram } from './program.ts'

export async function run (argv: string[]): Promise<void> {
  try {
    await (await buildProgram(argv)).parseAsync(argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) return
    throw err
  }
}

/**
 * 2 for a bad call or bad input (the operator can fix the command: a usage error, the
 * configuration, a catalogue file, a rule a service refused), 1 for any other failure.
 */
export async function exitCodeFor (err: unknown): Promise<1 | 2> {
  if (err instanceof UsageError) return 2
  if (err instanceof ApiError) return err.statusCode < 500 ? 2 : 1
  // Loaded only on this path: a command that reads the configuration or a catalogue file has loaded them already.
  const [{ ConfigError }, { CatalogError }] = await Promise.all([import('../config.ts'), import('../lib/catalog-file.ts')])
  return err instanceof ConfigError || err instanceof CatalogError ? 2 : 1
}

/** Runs the command line and sets the exit code. */
export async function main (argv: string[]): Promise<void> {
  try {
    await run(argv)
  } catch (err) {
    const message = (err as Error).message
    process.stderr.write(err instanceof CommandLineError ? `${message}\n` : `storefront: ${message}\n`)
    process.exitCode = await exitCodeFor(err)
  }
}
