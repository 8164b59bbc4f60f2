// A cursor page is cached with its page number: two crawls can reach the same place in the
// list at different page numbers (products were added in between), and each must be told its own.
import t from 'tap'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, pollState, UNLIMITED } from '../helper.ts'

interface Page { items: Array<{ name: string }>, page: number, nextCursor: string | null }

t.test('the same sort key reached at page 2 and at page 3 answers each its own page number', async (t) => {
  // Cached reads are served for a minute after each poll: the second read would hit the first's entry.
  const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '60000' } })
  const { key } = await makeKey(app)
  const read = async (query: string) => {
    const res = await app.inject({ url: `/external/v1/products${query}`, headers: authHeaders(key) })
    t.equal(res.statusCode, 200, `GET ${query.slice(0, 40)}`)
    return res.json<Page>()
  }
  const cursor = (page: Page) => `?cursor=${encodeURIComponent(page.nextCursor!)}`
  await importProducts(app, Array.from({ length: 40 }, (_, i) => makeProduct({ name: `Page B${String(i).padStart(3, '0')}` })))

  const first = cursor(await read(''))
  // 25 products sort before every one of those: the same place in the list is now a page later.
  await importProducts(app, Array.from({ length: 25 }, (_, i) => makeProduct({ name: `Page A${String(i).padStart(3, '0')}` })))
  await pollState(app)
  const early = await read(first)
  t.equal(early.page, 2, 'the first crawl\'s second page')
  t.equal(early.items[0]!.name, 'Page B025')

  const second = await read(cursor(await read(cursor(await read('')))))
  t.equal(second.items[0]!.name, 'Page B025', 'the second crawl reaches the same products')
  t.equal(second.page, 3, 'on its own third page')
  t.equal((await read(first)).page, 2, 'and the first crawl\'s page is still its second')
})
