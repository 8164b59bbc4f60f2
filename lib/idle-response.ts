// Notices a response whose client stopped reading: nothing more could be handed to its
// socket for a while. Node's own socket timeout is no measure of that: it stays quiet while
// the kernel takes bytes at all, even into the buffers of a client that reads nothing.
import type { ServerResponse } from 'node:http'

/** Calls `onIdle` once no byte has been handed to the response's socket for `ms`; stops with the response. */
export function whenIdle (response: ServerResponse, ms: number, onIdle: () => void): void {
  const socket = response.socket
  if (socket === null) return
  let sent = socket.bytesWritten
  let since = Date.now()
  const check = setInterval(() => {
    if (socket.bytesWritten !== sent) {
      sent = socket.bytesWritten
      since = Date.now()
    } else if (Date.now() - since >= ms) {
      clearInterval(check)
      onIdle()
    }
  }, Math.min(1000, Math.max(50, ms / 10)))
  response.once('close', () => clearInterval(check))
}
