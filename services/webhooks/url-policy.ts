// Where webhooks may go: https (http only when the operator allows it), at most 2,048
// characters, and never to a loopback, private, link-local or unspecified address unless
// the operator lists the host. Checked when an endpoint is saved and again at every
// delivery, inside the connection's own DNS lookup, so no answer can change in between.
import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import { apiError } from '../../errors.ts'
import { forbiddenKind } from '../../lib/ip-address.ts'

export const MAX_WEBHOOK_URL_LENGTH = 2048

export interface ResolvedAddress { address: string, family: number }
/** Every address a host name resolves to (injected by tests to play DNS). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>

// Below the request deadline (HANDLER_TIMEOUT_MS), so a silent DNS server answers 400, not 503.
const RESOLVE_TIMEOUT_MS = 3000

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

export interface UrlPolicyOptions {
  allowHttp: boolean
  /** Lower-case `host` or `host:port`. */
  allowedHosts: readonly string[]
  resolve?: Resolver
}

/** Why a URL was refused: the message of invalid_webhook_url. */
export class RefusedAddressError extends Error {
  readonly code = 'EWEBHOOKADDRESS'
}

export class WebhookUrlPolicy {
  readonly #allowHttp: boolean
  readonly #allowed: Set<string>
  readonly #resolve: Resolver

  constructor (options: UrlPolicyOptions) {
    this.#allowHttp = options.allowHttp
    this.#allowed = new Set(options.allowedHosts)
    this.#resolve = options.resolve ?? systemResolver
  }

  /** The URL as it will be stored, or 400 invalid_webhook_url saying why not. */
  async check (raw: string): Promise<string> {
    const refuse = (why: string) => apiError('invalid_webhook_url', `url: ${why}`)
    if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw refuse(`at most ${MAX_WEBHOOK_URL_LENGTH.toLocaleString('en')} characters, got ${raw.length.toLocaleString('en')}`)
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw refuse('not an absolute URL')
    }
    if (url.protocol === 'http:' && !this.#allowHttp) throw refuse('must use https://')
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse(`must use https://, not ${url.protocol}//`)
    if (url.username !== '' || url.password !== '') throw refuse('must not carry a user name or password')
    if (url.href.length > MAX_WEBHOOK_URL_LENGTH) throw refuse(`at most ${MAX_WEBHOOK_URL_LENGTH.toLocaleString('en')} characters once normalised`)
    if (!this.isAllowedHost(url)) {
      try {
        await this.#checkHost(url.hostname)
      } catch (err) {
        throw refuse((err as Error).message)
      }
    }
    return url.href
  }

  /** Whether the operator listed this URL's host (or host:port) in WEBHOOK_ALLOWED_HOSTS. */
  isAllowedHost (url: URL): boolean {
    const port = url.port || (url.protocol === 'https:' ? '443' : '80')
    const host = url.hostname.toLowerCase()
    return this.#allowed.has(host) || this.#allowed.has(`${host}:${port}`)
  }

  /** Refuses an IP literal, or a name any of whose addresses, that is not public. */
  async #checkHost (hostname: string): Promise<ResolvedAddress[]> {
    const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
    if (isIP(literal) !== 0) {
      const kind = forbiddenKind(literal)
      if (kind !== null) throw new RefusedAddressError(`the host ${hostname} is a ${kind} address; webhooks are delivered to public hosts only`)
      return [{ address: literal, family: isIP(literal) }]
    }
    const addresses = await this.#lookup(hostname)
    for (const { address } of addresses) {
      const kind = forbiddenKind(address)
      if (kind !== null) throw new RefusedAddressError(`the host ${hostname} resolves to ${address}, a ${kind} address; webhooks are delivered to public hosts only`)
    }
    return addresses
  }

  async #lookup (hostname: string): Promise<ResolvedAddress[]> {
    let timer: NodeJS.Timeout | undefined
    try {
      const addresses = await Promise.race([
        this.#resolve(hostname),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('timeout')), RESOLVE_TIMEOUT_MS) })
      ])
      if (addresses.length === 0) throw new Error('no address')
      return addresses
    } catch (err) {
      if (err instanceof RefusedAddressError) throw err
      throw new RefusedAddressError(`the host ${hostname} could not be resolved`)
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * The `lookup` of a delivery's connection: the same check on the addresses the socket will
   * connect to. For an allowed host it resolves without the check.
   */
  lookupFor (url: URL): LookupFunction {
    const allowed = this.isAllowedHost(url)
    return (hostname, options, callback) => {
      const resolved = allowed ? this.#lookup(hostname) : this.#checkHost(hostname)
      resolved.then((addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses
        if (wanted.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no IPv${String(options.family)} address`), { code: 'ENOTFOUND' }), '', 0)
          return
        }
        if (options.all === true) (callback as unknown as (err: null, addresses: ResolvedAddress[]) => void)(null, wanted)
        else callback(null, wanted[0]!.address, wanted[0]!.family)
      }, (err: Error) => callback(err as NodeJS.ErrnoException, '', 0))
    }
  }

  /**
   * The check of the address a socket actually connected to (IP literals skip the lookup):
   * null when it may be used, else why not.
   */
  refusedPeer (url: URL, remoteAddress: string | undefined): string | null {
    if (this.isAllowedHost(url)) return null
    if (remoteAddress === undefined) return 'no peer address'
    const kind = forbiddenKind(remoteAddress)
    return kind === null ? null : `${url.hostname} is at ${remoteAddress}, a ${kind} address`
  }
}
