// Runs `storefront serve` as a real process, for what app.inject cannot show: signals,
// sockets, the production build.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { sleep } from './helper.ts'

export async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

export interface ServerProcess {
  child: ChildProcess
  base: string
  output: () => string
  /** Resolves with the exit code. */
  exited: Promise<number | null>
}

/** Starts `node bin/storefront.js serve` (or `command`) in `cwd` and waits until /healthz answers. */
export async function startServer (cwd: string, env: Record<string, string>, timeoutMs = 60_000, command: [string, string[]] = [process.execPath, ['bin/storefront.js', 'serve']]): Promise<ServerProcess> {
  const port = await freePort()
  const child = spawn(command[0], command[1], {
    cwd,
    env: { ...process.env, NODE_OPTIONS: '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', (chunk) => { out += String(chunk) })
  child.stderr!.on('data', (chunk) => { out += String(chunk) })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${out}`)
    try {
      if ((await fetch(`${base}/healthz`)).ok) break
    } catch {}
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`server did not start in ${timeoutMs} ms:\n${out}`)
    }
    await sleep(200)
  }
  return { child, base, output: () => out, exited }
}

/** The demo key an embedded first start prints. */
export function printedKey (output: string): string | null {
  return /\b(sk_[A-Za-z0-9_-]{43})\b/.exec(output)?.[1] ?? null
}
