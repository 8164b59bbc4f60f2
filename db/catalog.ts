// The SQL of a catalogue import: which products the file changes (the plan), then its
// checked items written in batches (the coordination, one transaction around the writing,
// lives in services/catalog-import.ts). Products are upserted by id. A product whose content
// hash is what the store already has is left alone; a new or changed one gets its categories,
// variants, combinations and discounts (re)written, and its change event. With `replace`,
// products the file does not list are deleted. Quantities are not written here: the file's
// stock is set by db/stock.ts, the only code that changes stock, once each batch is written.
import { sql } from 'drizzle-orm'
import type { CatalogChecker, CheckedItem } from '../lib/catalog-file.ts'
import { toCents, toDecimalText } from '../lib/money.ts'
import type { CatalogGroup, CatalogProduct } from '../schemas/catalog-file.ts'
import { execute, type Tx } from './client.ts'
import { insertEvents } from './events.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import type { ImportedStock } from './stock.ts'

/** Products written per batch: a few round trips each, a few megabytes of rows at most. */
export const IMPORT_BATCH = 1000

// Products per statement when deleting those a replacing file leaves out.
const REMOVE_CHUNK = 5000

export interface WriterOptions {
  /** Delete the products the file does not list: the catalogue becomes exactly the file. */
  replace?: boolean
  /** Products per batch (IMPORT_BATCH). */
  batchSize?: number
}

/** A checked item as the import keeps it between reading the file and writing it: a product with its content hash. */
export type SpooledItem = CheckedItem & { hash?: string }

/** What an import will change, worked out before it locks anything. */
export interface ImportPlan {
  /** Products of the file to write: new ones, and those whose content differs from the store's. */
  write: Set<string>
  /** Of those, the ones the store has (they are locked before they are written). */
  changed: string[]
  /** Products a replacing file leaves out: deleted. */
  removed: string[]
  /** Other products whose variants, options or combinations the written ones take over. */
  donors: string[]
}

/** What the writer needs besides the rows: the plan, and the stock phase of each batch. */
export interface WriterPlan {
  plan: ImportPlan
  /** After a batch's rows are written: the file's stock for its products, and which of them it created. */
  onStock: (stock: ImportedStock[], created: string[]) => Promise<void>
}

const decimal = (amount: number) => toDecimalText(toCents(amount))
const instant = (value: string | null | undefined) => (value ? new Date(value).toISOString() : null)
/** A uuid[] parameter as one text value: ids passed the checks, so they hold no quote or comma. */
const uuids = (ids: Iterable<string>) => sql`${`{${[...ids].join(',')}}`}::uuid[]`
/** Rows as one jsonb parameter, for `jsonb_to_recordset`: one round trip whatever the batch. */
const recordset = (rows: object[]) => sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)`

function searchText (p: CatalogProduct): string {
  return [p.name, p.sku, p.barcode, ...(p.combinations ?? []).flatMap((c) => [c.sku, c.barcode])]
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .map((s) => s.toLowerCase())
    .join('\n')
}

/** Whether it can be ordered now: marked available, with stock, or with an available combination. */
function orderable (p: CatalogProduct): boolean {
  const inStock = (item: { quantity?: number | null, isAvailable: boolean }) => item.isAvailable && (item.quantity == null || item.quantity > 0)
  return p.isAvailable && (p.combinations?.length ? p.combinations.some(inStock) : inStock(p))
}

function discountRow (owner: { product_id: string } | { combination_id: string }, d: NonNullable<CatalogProduct['discount']>) {
  return { ...owner, type: d.type, value: decimal(d.value), starts_at: instant(d.startsAt), ends_at: instant(d.endsAt) }
}

/** Takes the catalogue-import lock for the transaction: one import at a time, from every instance and process. */
export async function lockCatalogImports (tx: Tx): Promise<void> {
  await tx.execute(sql.raw(`select pg_advisory_xact_lock(${ADVISORY_LOCKS.catalogImport})`))
}

/** Items of the file looked at per statement while planning. */
const PLAN_CHUNK = 5000

const childIds = (p: CatalogProduct) => [
  ...(p.variants ?? []).flatMap((v) => [v.id, ...v.options.map((o) => o.id)]),
  ...(p.combinations ?? []).map((c) => c.id)
].map((id) => id.toLowerCase())

/**
 * Reads the file's products (already checked) against the store, without locking anything:
 * which are new or changed, which a replacing file removes, and which other products would
 * lose children to them. Only imports change content hashes and children, and one runs at a
 * time (lockCatalogImports), so this stays true while the import runs.
 */
export async function planImport (tx: Tx, items: AsyncIterable<SpooledItem>, options: { replace?: boolean | undefined }): Promise<ImportPlan> {
  const plan: ImportPlan = { write: new Set(), changed: [], removed: [], donors: [] }
  const listed = new Set<string>()
  const donors = new Set<string>()
  let chunk: Array<{ id: string, hash: string, children: string[] }> = []
  const look = async () => {
    if (chunk.length === 0) return
    const stored = new Map((await execute<{ id: string, content_hash: string | null }>(tx, sql`
      select id::text as id, content_hash from products where id = any(${uuids(chunk.map((p) => p.id))})`)).map((r) => [r.id, r.content_hash]))
    const children: string[] = []
    for (const p of chunk) {
      if (stored.has(p.id) && stored.get(p.id) === p.hash) continue
      plan.write.add(p.id)
      if (stored.has(p.id)) plan.changed.push(p.id)
      children.push(...p.children)
    }
    if (children.length > 0) {
      const owners = await execute<{ owner: string }>(tx, sql`
        select v.product_id::text as owner from variants v where v.id = any(${uuids(children)})
        union select v.product_id::text from variant_options o join variants v on v.id = o.variant_id where o.id = any(${uuids(children)})
        union select c.product_id::text from combinations c where c.id = any(${uuids(children)})`)
      for (const { owner } of owners) donors.add(owner)
    }
    chunk = []
  }
  for await (const entry of items) {
    if (entry.section !== 'products') continue
    const id = entry.item.id.toLowerCase()
    listed.add(id)
    chunk.push({ id, hash: entry.hash!, children: childIds(entry.item) })
    if (chunk.length >= PLAN_CHUNK) await look()
  }
  await look()
  if (options.replace === true) {
    const stored = await execute<{ id: string }>(tx, sql`select id::text as id from products`)
    plan.removed = stored.map((r) => r.id).filter((id) => !listed.has(id))
  }
  // A product keeps its own children when it is rewritten: only the others are donors.
  plan.donors = [...donors].filter((id) => !plan.write.has(id))
  return plan
}

/** Fresh planner statistics for the catalogue tables. */
export async function analyzeCatalog (db: Tx): Promise<void> {
  await db.execute(sql`analyze products, product_search, product_categories, variants, variant_options, combinations, combination_options, discounts`)
}

interface PendingReference {
  path: string
  /** Where it is in the file: the product's index, then the category's (a brand comes after them). */
  place: [number, number]
  productId: string
  id: string
}

/** Batches of checked items on their way to the database, and what must wait for the end of the file. */
export class CatalogWriter {
  readonly counts = { created: 0, updated: 0, unchanged: 0, removed: 0 }
  /** Ids of the products created or changed: their documents are rendered once the import is whole. */
  readonly written: string[] = []
  private categories: CatalogGroup[] = []
  private brands: CatalogGroup[] = []
  private products: Array<{ index: number, product: CatalogProduct, hash: string }> = []
  /** Lower-cased ids of the categories and brands in the store: found there, or written by this import. */
  private readonly stored = { category: new Set<string>(), brand: new Set<string>() }
  /** The write under way, if any: the next batch is read and checked meanwhile (see `enqueue`). */
  private writing: Promise<void> = Promise.resolve()
  /** References to categories and brands neither in the store nor (yet) in the file: the file may define them further on. */
  private readonly pendingCategories: PendingReference[] = []
  private readonly pendingBrands: PendingReference[] = []
  /** Variants, options and combinations a product of the file took from another product: `owner` must be in the file too. */
  private readonly taken: Array<{ path: string, owner: string }> = []
  private readonly batchSize: number

  constructor (private readonly tx: Tx, private readonly checker: CatalogChecker, private readonly now: Date,
    private readonly options: WriterOptions, private readonly planned: WriterPlan) {
    this.batchSize = options.batchSize ?? IMPORT_BATCH
  }

  async add (checked: SpooledItem): Promise<void> {
    if (checked.section === 'products') {
      this.products.push({ index: checked.index, product: checked.item, hash: checked.hash! })
      if (this.products.length >= this.batchSize) await this.enqueue(() => this.writeProducts())
    } else {
      const list = this[checked.section]
      list.push(checked.item)
      if (list.length >= this.batchSize) await this.enqueue(() => this.writeGroups(checked.section))
    }
  }

  /**
   * Starts a write once the previous one is done, without waiting for it: while PostgreSQL
   * writes a batch, this process reads and checks the next. One write at a time and one
   * batch filling: memory stays bounded. A failed write fails the next `enqueue` or `finish`.
   */
  private async enqueue (write: () => Promise<void>): Promise<void> {
    await this.writing
    const running = write()
    // Awaited later; until then its failure must not count as unhandled.
    running.catch(() => {})
    this.writing = running
  }

  /** Resolves once no write is under way, whether it succeeded or not. */
  async settled (): Promise<void> {
    await this.writing.catch(() => {})
  }

  /** Writes what is left, then does what needed the whole file. Problems go to the checker. */
  async finish (): Promise<void> {
    await this.writing
    await this.writeProducts()
    await this.resolveReferences()
    if (!this.checker.ok) return
    for (const { path, owner } of this.taken) {
      // Taking from a product the file also lists (its own children are rewritten) is a move;
      // from one it does not, it is theft, unless that product is being removed.
      if (!this.checker.defines('product', owner) && !this.options.replace) this.checker.fail(`${path}: belongs to another product`)
    }
    if (!this.checker.ok) return
    if (this.options.replace) await this.removeUnlisted()
  }

  /** Whether a category or brand exists by now: in the store before, or written by this import. */
  private known (kind: 'category' | 'brand', id: string): boolean {
    return this.stored[kind].has(id.toLowerCase())
  }

  private async writeGroups (table: 'categories' | 'brands'): Promise<void> {
    const rows = this[table].map(({ id, name }) => ({ id, name }))
    this[table] = []
    if (rows.length === 0) return
    const stored = this.stored[table === 'categories' ? 'category' : 'brand']
    for (const { id } of rows) stored.add(id.toLowerCase())
    await this.tx.execute(sql`insert into ${sql.raw(table)} as g (id, name)
      select id, name from ${recordset(rows)} as x(id uuid, name text)
      on conflict (id) do update set name = excluded.name where g.name is distinct from excluded.name`)
  }

  /** Lower-cased ids of `ids` that are rows of `table`. */
  private async existing (table: 'categories' | 'brands', ids: Set<string>): Promise<string[]> {
    if (ids.size === 0) return []
    const rows = await execute<{ id: string }>(this.tx, sql`select id::text as id from ${sql.raw(table)} where id = any(${uuids(ids)})`)
    return rows.map((r) => r.id)
  }

  private async writeProducts (): Promise<void> {
    const read = this.products
    this.products = []
    // Products the plan found unchanged are not written at all, so their updated_at stays.
    const batch = read.filter(({ product }) => this.planned.plan.write.has(product.id.toLowerCase()))
    this.counts.unchanged += read.length - batch.length
    // Categories and brands read so far first, so the products can name them.
    await this.writeGroups('categories')
    await this.writeGroups('brands')
    if (batch.length === 0) return
    const unknown = { category: new Set<string>(), brand: new Set<string>() }
    for (const { product: p } of batch) {
      for (const id of p.categoryIds ?? []) if (!this.known('category', id)) unknown.category.add(id.toLowerCase())
      if (p.brandId && !this.known('brand', p.brandId)) unknown.brand.add(p.brandId.toLowerCase())
    }
    for (const id of await this.existing('categories', unknown.category)) this.stored.category.add(id)
    for (const id of await this.existing('brands', unknown.brand)) this.stored.brand.add(id)

    const rows = batch.map(({ product: p, hash }) => ({
      id: p.id,
      name: p.name,
      sku: p.sku ?? null,
      barcode: p.barcode ?? null,
      price: decimal(p.price),
      is_available: p.isAvailable,
      image_url: p.imageUrl ?? null,
      // A brand the file defines further on is set at the end.
      brand_id: p.brandId && this.known('brand', p.brandId) ? p.brandId : null,
      search_text: searchText(p),
      available: orderable(p),
      content_hash: hash
    }))
    // `before` is the statement's snapshot, so it tells new from changed.
    const written = await execute<{ id: string, created: boolean }>(this.tx, sql`
      with input as (
        select * from ${recordset(rows)} as x(id uuid, name text, sku text, barcode text, price numeric,
          is_available boolean, image_url text, brand_id uuid, search_text text, available boolean, content_hash text)
      ), before as (
        select p.id from products p join input on input.id = p.id
      ), written as (
        insert into products as p (id, name, sku, barcode, price, is_available, image_url, brand_id, available, content_hash, updated_at)
        select id, name, sku, barcode, price, is_available, image_url, brand_id, available, content_hash,
          ${this.now.toISOString()}::timestamptz from input
        on conflict (id) do update set name = excluded.name, sku = excluded.sku, barcode = excluded.barcode,
          price = excluded.price, is_available = excluded.is_available,
          image_url = excluded.image_url, brand_id = excluded.brand_id,
          available = excluded.available, content_hash = excluded.content_hash, updated_at = excluded.updated_at
        where p.content_hash is distinct from excluded.content_hash
        returning p.id
      ), searched as (
        -- Its search row in the same statement, sorted by lower(name) as the list is.
        insert into product_search as s (product_id, sort_name, search_text)
        select input.id, lower(input.name), input.search_text from input join written on written.id = input.id
        on conflict (product_id) do update set sort_name = excluded.sort_name, search_text = excluded.search_text
        where (s.sort_name, s.search_text) is distinct from (excluded.sort_name, excluded.search_text)
      ), changes as (
        select written.id, before.id is null as created from written left join before on before.id = written.id
      ), events as (
        ${insertEvents({ type: { when: sql`created`, then: 'product.created', else: 'product.updated' }, resourceId: sql`id`, from: sql`changes` })}
      )
      select id::text as id, created from changes`)

    const created = written.filter((r) => r.created).map((r) => r.id)
    const updated = written.filter((r) => !r.created).map((r) => r.id)
    this.counts.created += created.length
    this.counts.updated += updated.length
    this.counts.unchanged += batch.length - written.length
    for (const { id } of written) this.written.push(id)
    if (written.length > 0) {
      const isWritten = new Set(written.map((r) => r.id))
      const writtenBatch = batch.filter(({ product }) => isWritten.has(product.id.toLowerCase()))
      await this.replaceChildren(writtenBatch, updated)
      // The file's quantity is the stock.
      await this.planned.onStock(writtenBatch.map(({ product: p }) => ({
        productId: p.id,
        // With combinations, stock lives on them.
        quantity: p.combinations?.length ? null : (p.quantity ?? null),
        combinations: (p.combinations ?? []).map((c) => ({ id: c.id, quantity: c.quantity ?? null }))
      })), created)
    }
  }

  private async replaceChildren (batch: Array<{ index: number, product: CatalogProduct }>, updated: string[]): Promise<void> {
    if (updated.length > 0) {
      // Their old children go; the combinations' discounts and options, and the variants'
      // options, follow by ON DELETE CASCADE.
      await this.tx.execute(sql`
        with a as (delete from product_categories where product_id = any(${uuids(updated)})),
        b as (delete from discounts where product_id = any(${uuids(updated)})),
        c as (delete from combinations where product_id = any(${uuids(updated)}))
        delete from variants where product_id = any(${uuids(updated)})`)
    }

    const links: Array<{ product_id: string, category_id: string }> = []
    const variants: Array<{ id: string, product_id: string, name: string, position: number }> = []
    const options: Array<{ id: string, variant_id: string, name: string, position: number }> = []
    const combinations: object[] = []
    const combinationOptions: Array<{ combination_id: string, option_id: string, position: number }> = []
    const discounts: object[] = []
    /** `kind:id` of each child → its path in the file, for the ids another product holds. */
    const paths = new Map<string, string>()

    for (const { index, product: p } of batch) {
      const at = `products[${index}]`
      p.categoryIds?.forEach((categoryId, ci) => {
        if (this.known('category', categoryId)) links.push({ product_id: p.id, category_id: categoryId })
        else this.pendingCategories.push({ path: `${at}.categoryIds[${ci}]`, place: [index, ci], productId: p.id, id: categoryId })
      })
      if (p.brandId && !this.known('brand', p.brandId)) {
        this.pendingBrands.push({ path: `${at}.brandId`, place: [index, Infinity], productId: p.id, id: p.brandId })
      }
      if (p.discount) discounts.push(discountRow({ product_id: p.id }, p.discount))
      // Options are kept in the order of the product's variants.
      const variantOf = new Map<string, number>()
      p.variants?.forEach((v, position) => {
        variants.push({ id: v.id, product_id: p.id, name: v.name, position })
        paths.set(`variant:${v.id.toLowerCase()}`, `${at}.variants[${position}].id`)
        v.options.forEach((o, oi) => {
          options.push({ id: o.id, variant_id: v.id, name: o.name, position: oi })
          variantOf.set(o.id.toLowerCase(), position)
          paths.set(`option:${o.id.toLowerCase()}`, `${at}.variants[${position}].options[${oi}].id`)
        })
      })
      p.combinations?.forEach((c, position) => {
        combinations.push({
          id: c.id,
          product_id: p.id,
          sku: c.sku ?? null,
          barcode: c.barcode ?? null,
          price: decimal(c.price),
          is_available: c.isAvailable,
          image_url: c.imageUrl ?? null,
          position
        })
        paths.set(`combination:${c.id.toLowerCase()}`, `${at}.combinations[${position}].id`)
        for (const optionId of c.optionIds) combinationOptions.push({ combination_id: c.id, option_id: optionId, position: variantOf.get(optionId.toLowerCase())! })
        if (c.discount) discounts.push(discountRow({ combination_id: c.id }, c.discount))
      })
    }

    if (paths.size > 0) await this.takeOver(paths)
    await this.tx.execute(sql`
      with pc as (
        insert into product_categories (product_id, category_id)
        select product_id, category_id from ${recordset(links)} as x(product_id uuid, category_id uuid)
      ), v as (
        insert into variants (id, product_id, name, position)
        select id, product_id, name, position from ${recordset(variants)} as x(id uuid, product_id uuid, name text, position integer)
      ), vo as (
        insert into variant_options (id, variant_id, name, position)
        select id, variant_id, name, position from ${recordset(options)} as x(id uuid, variant_id uuid, name text, position integer)
      ), c as (
        insert into combinations (id, product_id, sku, barcode, price, is_available, image_url, position)
        select id, product_id, sku, barcode, price, is_available, image_url, position
        from ${recordset(combinations)} as x(id uuid, product_id uuid, sku text, barcode text, price numeric,
          is_available boolean, image_url text, position integer)
      ), co as (
        insert into combination_options (combination_id, option_id, position)
        select combination_id, option_id, position from ${recordset(combinationOptions)} as x(combination_id uuid, option_id uuid, position integer)
      )
      insert into discounts (product_id, combination_id, type, value, starts_at, ends_at)
      select product_id, combination_id, type, value, starts_at, ends_at
      from ${recordset(discounts)} as x(product_id uuid, combination_id uuid, type text, value numeric, starts_at timestamptz, ends_at timestamptz)`)
  }

  /**
   * The batch's own children are gone by now: any variant, option or combination still
   * stored under one of their ids belongs to another product. It is deleted so the batch
   * can have it, and its owner noted: `finish` accepts that only when the file lists the
   * owner too (or removes it).
   */
  private async takeOver (paths: Map<string, string>): Promise<void> {
    const ids = { variant: [] as string[], option: [] as string[], combination: [] as string[] }
    for (const key of paths.keys()) {
      const [kind, id] = key.split(':') as [keyof typeof ids, string]
      ids[kind].push(id)
    }
    const held = await execute<{ kind: keyof typeof ids, id: string, owner: string }>(this.tx, sql`
      select 'variant' as kind, v.id::text as id, v.product_id::text as owner from variants v where v.id = any(${uuids(ids.variant)})
      union all
      select 'option', o.id::text, v.product_id::text from variant_options o join variants v on v.id = o.variant_id where o.id = any(${uuids(ids.option)})
      union all
      select 'combination', c.id::text, c.product_id::text from combinations c where c.id = any(${uuids(ids.combination)})`)
    if (held.length === 0) return
    for (const { kind, id, owner } of held) this.taken.push({ path: paths.get(`${kind}:${id}`)!, owner })
    const of = (kind: keyof typeof ids) => uuids(held.filter((h) => h.kind === kind).map((h) => h.id))
    await this.tx.execute(sql`
      with c as (delete from combinations where id = any(${of('combination')})),
      o as (delete from variant_options where id = any(${of('option')}))
      delete from variants where id = any(${of('variant')})`)
  }

  /** Categories and brands named before the file defined them: linked now, or reported. */
  private async resolveReferences (): Promise<void> {
    const problems = [
      ...this.pendingCategories.filter((ref) => !this.known('category', ref.id)).map((ref) => ({ ref, what: 'category' })),
      ...this.pendingBrands.filter((ref) => !this.known('brand', ref.id)).map((ref) => ({ ref, what: 'brand' }))
    ]
    if (problems.length > 0) {
      // In the order of the file.
      problems.sort((a, b) => a.ref.place[0] - b.ref.place[0] || a.ref.place[1] - b.ref.place[1])
      this.checker.fail(...problems.map(({ ref, what }) => `${ref.path}: no ${what} has id ${ref.id}`))
      return
    }
    if (this.pendingCategories.length > 0) {
      await this.tx.execute(sql`insert into product_categories (product_id, category_id)
        select product_id, category_id from ${recordset(this.pendingCategories.map((r) => ({ product_id: r.productId, category_id: r.id })))}
        as x(product_id uuid, category_id uuid)`)
    }
    if (this.pendingBrands.length > 0) {
      await this.tx.execute(sql`update products p set brand_id = x.brand_id
        from ${recordset(this.pendingBrands.map((r) => ({ id: r.productId, brand_id: r.id })))} as x(id uuid, brand_id uuid)
        where p.id = x.id`)
    }
  }

  private async removeUnlisted (): Promise<void> {
    const unlisted = this.planned.plan.removed
    for (let i = 0; i < unlisted.length; i += REMOVE_CHUNK) {
      // Their categories, variants, combinations and discounts go by ON DELETE CASCADE; order
      // items keep the product's id and name (no foreign key to the catalogue).
      const [row] = await execute<{ removed: number }>(this.tx, sql`
        with gone as (delete from products where id = any(${uuids(unlisted.slice(i, i + REMOVE_CHUNK))}) returning id),
        events as (${insertEvents({ type: 'product.deleted', resourceId: sql`id`, from: sql`gone` })})
        select count(*)::int as removed from gone`)
      this.counts.removed += row!.removed
    }
  }
}
