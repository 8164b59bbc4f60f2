// What every command of the `storefront` program shares: the configuration (read once, when
// a command runs), printing one JSON document or a line, and the errors that mean "fix the
// command" (exit code 2). Light on purpose: `storefront --version` and `--help` load this and
// commander, nothing else (the commands' modules are loaded when called: program.ts).
import type { Command } from 'commander'
import type { Config } from '../config.ts'

/** A mistake in how the command was called or in its input: printed without a stack, exit code 2. */
export class UsageError extends Error {}

/** A command line the parser refused; the message is the whole line to print, already naming the command. */
export class CommandLineError extends UsageError {}

/** A database that cannot do the command's work; the message is the operator's one line. */
export class DatabaseFailureError extends Error {}

export interface Output { json: boolean }

export const JSON_OPTION = ['--json', 'print one JSON document on stdout'] as const

export interface CommandContext {
  /** The configuration, validated before the command's action runs. */
  config: () => Config
}

export function print (out: Output, document: unknown, text: string): void {
  process.stdout.write(out.json ? `${JSON.stringify(document, null, 2)}\n` : `${text}\n`)
}

/** What each command says when its arguments are missing, in the words its checks use. */
export const missingArguments = new WeakMap<Command, string>()
