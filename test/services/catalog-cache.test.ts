import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute } from '../../db/client.ts'
import { resetCatalog } from '../../db/settings.ts'
import { ReadCache } from '../../lib/read-cache.ts'
import { CatalogCache, VOLATILE } from '../../services/catalog-cache.ts'
import { Store, refreshState } from '../../services/store.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, created, createTestDatabase, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, usingPostgres } from '../helper.ts'

const POLL_MS = 100
// How far ahead a discount starts or ends: long enough for an import and a read to come
// first; a machine too slow for that tries again with twice the lead (aheadOf).
const LEAD_MS = 2500

// Two instances on one database (a real PostgreSQL database when TEST_DATABASE_URL is set):
// `writer` imports, `reader` serves the reads and learns of changes only by polling.
const { database } = await createTestDatabase(t)
// What is cached here is dropped by the catalogue version alone: a poll that runs late on a
// loaded machine must not make the reader read through (READ_SETTLE_MS, freshness.test.ts).
const env = { STATE_POLL_MS: String(POLL_MS), READ_SETTLE_MS: '60000' }
const writer = await buildTestApp(t, { database, env })
const reader = await buildTestApp(t, { database, env })
// Ready, as a serving instance is: their background jobs publish the imports' events (which
// moves the catalogue version) from the start, not at their first request.
await Promise.all([writer.ready(), reader.ready()])
const { key } = await makeKey(writer, ['products:list', 'products:find'])
const { key: orderKey } = await makeKey(writer, ['orders:create'])
const catalogCache = (settleMs: number) => new CatalogCache(database, { bytes: 100_000, searchBytes: 100_000, maxMs: 60_000, settleMs })
const poll = (cache: CatalogCache) => refreshState(database, new Store(), cache)
t.comment(`two instances on ${usingPostgres ? 'PostgreSQL' : 'one PGlite'}`)

async function read (app: App, id: string) {
  const res = await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(key) })
  if (res.statusCode !== 200) throw new Error(`GET product answered ${res.statusCode}: ${res.body}`)
  return res.json<{ price: number, sellPrice: number, combinations: Array<{ sellPrice: number }> }>()
}

async function listed (app: App, id: string) {
  const res = await app.inject({ url: `/external/v1/products?query=${encodeURIComponent(id)}`, headers: authHeaders(key) })
  return res.json<{ items: Array<{ id: string, price: number, sellPrice: number }> }>().items.find((p) => p.id === id)
}

/**
 * Resolves once `app`'s own state poll (its background job) has run `times` more times: with
 * 2, a whole poll begun after this call has seen the database. A spy on the instance's
 * catalogue cache, no mock: the poll and what it reads are the real ones.
 */
function polled (app: App, times = 2): Promise<void> {
  const cache = app.catalogCache
  const seen = cache.seen
  let left = times
  return new Promise((resolve) => {
    cache.seen = function (...args: Parameters<typeof seen>) {
      seen.apply(this, args)
      if (--left > 0) return
      cache.seen = seen
      resolve()
    }
  })
}

/**
 * Imports the product `make` builds around a moment `lead` ms ahead and reads it with `before`
 * while that moment is still ahead; when the machine was too slow for that, again with a new
 * product and twice the lead. Resolves with the moment, the product and what was read.
 */
async function aheadOf<V> (make: (at: Date) => CatalogProduct, before: (product: CatalogProduct) => Promise<V>): Promise<{ at: Date, product: CatalogProduct, read: V }> {
  for (let lead = LEAD_MS; ; lead *= 2) {
    const at = new Date(Date.now() + lead)
    const product = make(at)
    await importProducts(writer, [product])
    await polled(reader)
    const read = await before(product)
    if (Date.now() < at.getTime()) return { at, product, read }
    t.comment(`the import and the read took longer than ${lead} ms: again with a longer lead`)
  }
}

/** Resolves just after `at` (by the clock the database shares). */
const reach = (at: Date) => sleep(Math.max(0, at.getTime() - Date.now()) + 20)

t.test('an import on one instance is seen by another at its next poll', async (t) => {
  // The product's id is also its name, so the list can find it by query.
  const id = crypto.randomUUID()
  const product = makeProduct({ id, name: `cache ${id}`, price: 10 })
  await importProducts(writer, [product])
  // The first import of a store is not what this test is about (see the report on
  // readStoreState); wait until the reader has caught up with it.
  await polled(reader)

  t.equal((await read(reader, id)).price, 10)
  t.equal((await listed(reader, id))?.price, 10)

  // A change behind the catalogue's back (no version bump) is not seen: the reads are cached.
  await execute(database.db, sql`update products set price = 11 where id = ${id}`)
  await polled(reader)
  t.equal((await read(reader, id)).price, 10, 'the product read is cached, polls or not')
  t.equal((await listed(reader, id))?.price, 10, 'the list read is cached')

  await importProducts(writer, [{ ...product, price: 12.34 }])
  t.equal((await read(writer, id)).price, 12.34, 'the importing instance sees it at once')
  await polled(reader)
  t.equal((await read(reader, id)).price, 12.34, 'the other instance sees the new price once it has polled')
  t.equal((await listed(reader, id))?.sellPrice, 12.34, 'in its lists too')
})

t.test('the same instance drops its cached reads when it imports', async (t) => {
  const product = makeProduct({ price: 5 })
  await importProducts(writer, [product])
  t.equal((await read(writer, product.id)).price, 5)
  await importProducts(writer, [{ ...product, price: 6.5 }])
  t.equal((await read(writer, product.id)).price, 6.5)
})

t.test('a discount that starts in a moment changes sellPrice without any import', async (t) => {
  const combinationsOf = (id: string): Pick<CatalogProduct, 'variants' | 'combinations'> => {
    const option = crypto.randomUUID()
    return {
      variants: [{ id: crypto.randomUUID(), name: 'Size', options: [{ id: option, name: 'M' }] }],
      combinations: [{ id, optionIds: [option], price: 8, isAvailable: true }]
    }
  }
  const { at: startsAt, product, read: before } = await aheadOf((at) => {
    const id = crypto.randomUUID()
    return makeProduct({
      id,
      name: `discount ${id}`,
      price: 10,
      discount: { type: 'percentage', value: 50, startsAt: at.toISOString(), endsAt: null },
      ...combinationsOf(crypto.randomUUID())
    })
  }, async (product) => ({ product: await read(reader, product.id), listed: await listed(reader, product.id) }))
  t.equal(before.product.sellPrice, 10, 'before the start: the price')
  t.equal(before.product.combinations[0]!.sellPrice, 8)
  t.equal(before.listed?.sellPrice, 10)

  // The cached reads expire at the start itself: the first read after it shows the discount.
  await reach(startsAt)
  const after = await read(reader, product.id)
  t.equal(after.sellPrice, 5, 'the first read after the start shows the discount')
  t.equal(after.combinations[0]!.sellPrice, 4, 'the combination inherits the started discount')
  t.equal((await listed(reader, product.id))?.sellPrice, 5, 'the list too')
})

t.test('a discount that ends restores the price without any import', async (t) => {
  const { at: endsAt, product, read: before } = await aheadOf(
    (at) => makeProduct({ price: 10, discount: { type: 'amount', value: 2.5, startsAt: null, endsAt: at.toISOString() } }),
    (product) => read(reader, product.id))
  t.equal(before.sellPrice, 7.5, 'before the end: the discounted price')
  await reach(endsAt)
  t.equal((await read(reader, product.id)).sellPrice, 10, 'the first read after the end shows the price')
})

t.test('the first import into an empty store is seen by every instance', async (t) => {
  const { database } = await createTestDatabase(t)
  const writer = await buildTestApp(t, { database, env: { STATE_POLL_MS: String(POLL_MS) } })
  const reader = await buildTestApp(t, { database, env: { STATE_POLL_MS: String(POLL_MS) } })
  const { key } = await makeKey(writer, ['products:list'])
  const list = async (app: App) => (await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })).json<{ total: number }>()
  t.equal((await list(reader)).total, 0)
  t.equal((await list(writer)).total, 0)
  await importProducts(writer, [makeProduct()])
  t.equal((await list(writer)).total, 1, 'the importing instance')
  await polled(reader)
  t.equal((await list(reader)).total, 1, 'the other instance, once it has polled')
})

/** The ids a search on `app` finds, and its total. */
async function searched (app: App, query: string) {
  const res = await app.inject({ url: `/external/v1/products?${query}`, headers: authHeaders(key) })
  if (res.statusCode !== 200) throw new Error(`GET products answered ${res.statusCode}: ${res.body}`)
  const page = res.json<{ items: Array<{ id: string }>, total: number }>()
  return { ids: page.items.map((p) => p.id), total: page.total }
}

t.test('a search\'s matches are kept at its first miss, whatever the query\'s case', async (t) => {
  const word = `srch${crypto.randomUUID().slice(0, 8)}`
  const product = makeProduct({ name: `Lamp ${word}` })
  await importProducts(writer, [product])
  await polled(reader)
  t.same(await searched(reader, `query=${word}`), { ids: [product.id], total: 1 })
  // Behind the catalogue's back (no import): the product no longer matches in the database.
  await execute(database.db, sql`update product_search set search_text = 'nothing' where product_id = ${product.id}`)
  t.same(await searched(reader, `query=${word.toUpperCase()}`), { ids: [product.id], total: 1 },
    'another case of the query (another page read) finds what the first search found, without searching again')
  reader.catalogCache.searches.clear()
  const capitalised = word[0]!.toUpperCase() + word.slice(1)
  t.same(await searched(reader, `query=${capitalised}`), { ids: [], total: 0 }, 'searched again once the matches are gone')
})

t.test('an import drops every search\'s matches, on every instance', async (t) => {
  const word = `srch${crypto.randomUUID().slice(0, 8)}`
  const product = makeProduct({ name: `Lamp ${word}` })
  await importProducts(writer, [product])
  await polled(reader)
  t.same((await searched(reader, `query=${word}`)).total, 1)
  await importProducts(writer, [{ ...product, name: 'Lamp renamed' }])
  t.same(await searched(writer, `query=${word.toUpperCase()}`), { ids: [], total: 0 }, 'the importing instance')
  await polled(reader)
  t.same(await searched(reader, `query=${word.toUpperCase()}`), { ids: [], total: 0 }, 'the other instance, once it has polled')
})

t.test('a stock change drops the matches of searches filtered by availability, on every instance', async (t) => {
  const word = `srch${crypto.randomUUID().slice(0, 8)}`
  const [last, plenty] = [makeProduct({ name: `Lamp ${word} a`, quantity: 1 }), makeProduct({ name: `Lamp ${word} b`, quantity: 5 })]
  await importProducts(writer, [last, plenty])
  await polled(reader)
  const available = `query=${word}&isAvailable=true`
  t.same((await searched(reader, available)).total, 2)
  t.same((await searched(reader, `query=${word}`)).total, 2)
  await created(t, await postOrder(writer, orderKey, orderBody([line(last, 1)])))
  await polled(reader)
  t.same(await searched(reader, `query=${word.toUpperCase()}&isAvailable=true`), { ids: [plenty.id], total: 1 }, 'the product sold out left the search')
  t.same((await searched(reader, `query=${word.toUpperCase()}`)).total, 2, 'and is still found without the filter')
})

t.test('a poll drops the reads that have expired, though no one reads them again', async (t) => {
  const state = new CatalogCache(database, { bytes: 100_000, searchBytes: 100_000, maxMs: 100, settleMs: 60_000 })
  await poll(state)
  const load = async () => ({ value: 1, changesAt: [] })
  await state.cachedRead('page', load)
  await state.cachedRead('page', load)
  await state.cachedMatches('search', load)
  t.same([state.reads.size, state.searches.size], [1, 1])
  await poll(state)
  t.same([state.reads.size, state.searches.size], [1, 1], 'not yet expired')
  await sleep(150)
  await poll(state)
  t.same([state.reads.size, state.searches.size, state.reads.bytes, state.searches.bytes], [0, 0, 0, 0], 'gone at the next poll')
})

t.test('concurrent misses of one key share one load', async (t) => {
  const state = catalogCache(60_000)
  await poll(state)
  let loads = 0
  const load = async () => {
    loads++
    await sleep(50)
    return { value: { n: loads }, changesAt: [] }
  }
  const results = await Promise.all(Array.from({ length: 10 }, () => state.cachedRead('k', load)))
  t.equal(loads, 1)
  t.same(results, Array.from({ length: 10 }, () => ({ n: 1 })))
  t.same(await Promise.all(Array.from({ length: 10 }, () => state.cachedRead('k', load))), Array.from({ length: 10 }, () => ({ n: 2 })), 'missed again: one load, kept')
  t.same(await state.cachedRead('k', load), { n: 2 }, 'then served from the cache')
  t.equal(loads, 2)
  t.same(await state.cachedRead('other', load), { n: 3 }, 'another key loads on its own')
})

t.test('a read is kept when it misses again within a cacheful of other misses', async (t) => {
  // Room for 10 reads of 1,000 bytes.
  const state = new CatalogCache(database, { bytes: 10_000, searchBytes: 10_000, maxMs: 60_000, settleMs: 60_000 })
  await poll(state)
  let loads = 0
  const load = async () => ({ value: ++loads, changesAt: [], bytes: 1000 })
  t.equal(await state.cachedRead('hot', load), 1)
  t.equal(state.reads.size, 0, 'its first miss is not kept')
  for (let i = 0; i < 5; i++) await state.cachedRead(`other ${i}`, load)
  t.equal(await state.cachedRead('hot', load), 7, 'its second, 5,000 bytes of misses later, is read again')
  t.equal(await state.cachedRead('hot', load), 7, 'and kept')
  t.equal(state.reads.size, 1, 'reads asked for once are not kept')

  t.equal(await state.cachedRead('cold', load), 8)
  for (let i = 0; i < 11; i++) await state.cachedRead(`more ${i}`, load)
  t.equal(await state.cachedRead('cold', load), 20, 'a read that comes back after 11,000 bytes of misses')
  t.equal(await state.cachedRead('cold', load), 21, 'is not kept: the cache would have let it go by then')
  t.equal(await state.cachedRead('cold', load), 21, 'until it comes back soon')
  t.equal(await state.cachedRead('hot', load), 7, 'and none of them pushed the kept one out')
})

t.test('a read that raced a catalogue change is not kept', async (t) => {
  const state = catalogCache(60_000)
  await poll(state)
  let loads = 0
  const load = async () => {
    loads++
    // The change lands while this read is under way.
    if (loads === 2) await state.productsChanged([crypto.randomUUID()])
    return { value: loads, changesAt: [] }
  }
  await state.cachedRead('k', load)
  t.equal(await state.cachedRead('k', load), 2, 'missed again')
  t.equal(await state.cachedRead('k', load), 3, 'read again, not served from the cache')
  t.equal(await state.cachedRead('k', load), 3, 'this one is kept')
})

t.test('a search\'s matches that raced a stock change are kept, unless availability or updatedSince filter it; none that raced an import', async (t) => {
  const state = catalogCache(60_000)
  await poll(state)
  let loads = 0
  // Each load finds its matches, then the change lands before it returns.
  const racing = (change: () => Promise<void>, tags: string[] = []) => async () => {
    const found = ++loads
    await change()
    return { value: found, changesAt: [], tags }
  }
  const stockChange = () => state.productsChanged([crypto.randomUUID()])
  const anImport = async () => {
    await resetCatalog(database.db)
    await poll(state)
  }
  t.equal(await state.cachedMatches('plain', racing(stockChange)), 1)
  t.equal(await state.cachedMatches('plain', racing(stockChange)), 1, 'kept: stock does not change what it finds')
  t.equal(await state.cachedMatches('available', racing(stockChange, [VOLATILE])), 2)
  t.equal(await state.cachedMatches('available', racing(stockChange, [VOLATILE])), 3, 'filtered by availability: read again')
  t.equal(await state.cachedMatches('imported', racing(anImport)), 4)
  t.equal(await state.cachedMatches('imported', racing(anImport)), 5, 'an import raced it: read again')
  t.equal(await state.cachedRead('page', racing(stockChange)), 6)
  t.equal(await state.cachedRead('page', racing(stockChange)), 7)
  t.equal(await state.cachedRead('page', async () => ({ value: ++loads, changesAt: [] })), 8, 'a page shows its products: one that raced any change is not kept')
  t.equal(await state.cachedRead('page', async () => ({ value: ++loads, changesAt: [] })), 8)
})

t.test('an instance that has not polled lately reads through its cache', async (t) => {
  const state = catalogCache(200)
  let loads = 0
  const load = async () => ({ value: ++loads, changesAt: [] })
  t.equal(await state.cachedRead('k', load), 1, 'never polled: read through')
  t.equal(await state.cachedRead('k', load), 2)
  await poll(state)
  t.equal(await state.cachedRead('k', load), 3)
  t.equal(await state.cachedRead('k', load), 4, 'missed again, so kept')
  t.equal(await state.cachedRead('k', load), 4, 'just polled: served from the cache')
  await sleep(250)
  t.equal(await state.cachedRead('k', load), 5, 'the last poll is older than the settle time: read through')
})

t.test('the read cache expires entries and stays within its bytes', async (t) => {
  const cache = new ReadCache<number>(30)
  const now = 1_000_000
  cache.set('a', 1, now + 10, 10)
  t.equal(cache.get('a', now + 9), 1)
  t.equal(cache.get('a', now + 10), undefined, 'gone at its expiry')
  t.equal(cache.bytes, 0, 'an expired entry no longer counts')
  cache.set('a', 1, now + 100, 10)
  cache.set('b', 2, now + 100, 10)
  cache.set('c', 3, now + 100, 10)
  cache.set('b', 22, now + 100, 10)
  t.equal(cache.size, 3)
  t.equal(cache.get('a', now), 1, 'setting a key again evicts nothing')
  t.equal(cache.get('b', now), 22)
  cache.set('d', 4, now + 100, 20)
  t.equal(cache.bytes, 30)
  t.same(['a', 'c'].map((k) => cache.get(k, now)), [undefined, undefined], 'the oldest insertions went until it fit')
  t.same(['b', 'd'].map((k) => cache.get(k, now)), [22, 4])
  cache.set('e', 5, now + 100, 31)
  t.equal(cache.get('e', now), undefined, 'an entry larger than the whole cache is not kept')
  t.equal(cache.size, 2, 'and evicts nothing')
  cache.clear()
  t.equal(cache.bytes, 0)
})

t.test('an entry weighs its JSON: one page of products counts as much as its products', async (t) => {
  const product = { id: crypto.randomUUID(), name: 'A product with a name', price: 10 }
  const page = Array.from({ length: 25 }, () => product)
  const cache = new ReadCache<unknown>(JSON.stringify(product).length * 30)
  cache.set('page', page, Date.now() + 60_000)
  t.equal(cache.bytes, JSON.stringify(page).length)
  for (let i = 0; i < 5; i++) cache.set(`product ${i}`, product, Date.now() + 60_000)
  t.equal(cache.get('page'), undefined, 'five products more than the room the page left pushed it out')
  t.equal(cache.size, 5)
})
