// The `storefront` command (bin/storefront.js runs it): serve, migrate, and the operator's
// catalogue, key, maintenance, settings, order and webhook commands. Every subcommand with
// --json prints one JSON document on stdout and nothing else there; problems go to stderr as
// one line, and the exit code says whose they are to fix.
import { CommanderError } from 'commander'
import { ConfigError } from '../config.ts'
import { ApiError } from '../errors.ts'
import { CatalogError } from '../lib/catalog-file.ts'
import { CommandLineError, UsageError } from './context.ts'
import { buildProgram } from './program.ts'

export async function run (argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) return
    throw err
  }
}

/**
 * 2 for a bad call or bad input (the operator can fix the command: a usage error, the
 * configuration, a catalogue file, a rule a service refused), 1 for any other failure.
 */
export function exitCodeFor (err: unknown): 1 | 2 {
  if (err instanceof UsageError || err instanceof ConfigError || err instanceof CatalogError) return 2
  return err instanceof ApiError && err.statusCode < 500 ? 2 : 1
}

/** Runs the command line and sets the exit code. */
export async function main (argv: string[]): Promise<void> {
  try {
    await run(argv)
  } catch (err) {
    const message = (err as Error).message
    process.stderr.write(err instanceof CommandLineError ? `${message}\n` : `storefront: ${message}\n`)
    process.exitCode = exitCodeFor(err)
  }
}
