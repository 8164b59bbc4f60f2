ALTER TABLE "order_items" ADD COLUMN "taken" integer;--> statement-breakpoint
-- Claims an Idempotency-Key for the calling transaction: true when it was free (or expired).
-- Only this claim waits at most `wait_ms` for a concurrent request with the same key (then
-- PostgreSQL's lock_not_available, 55P03, which the service answers idempotency_key_in_use);
-- the transaction's lock timeout is put back before it goes on to lock stock.
CREATE FUNCTION claim_idempotency_key(api_key uuid, idempotency_key text, hash text, ttl_hours integer, wait_ms integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  previous text := current_setting('lock_timeout');
  claimed boolean;
BEGIN
  PERFORM set_config('lock_timeout', wait_ms::text, true);
  INSERT INTO idempotency_keys (api_key_id, key, request_hash, expires_at)
  VALUES (api_key, idempotency_key, hash, now() + make_interval(hours => ttl_hours))
  ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash, status_code = null,
    response_body = null, response_headers = null, created_at = now(), expires_at = excluded.expires_at
    WHERE idempotency_keys.expires_at <= now();
  claimed := FOUND;
  PERFORM set_config('lock_timeout', previous, true);
  RETURN claimed;
END
$$;
--> statement-breakpoint
-- What an order or a hold is priced from, in one round trip: with `lock`, its products are
-- locked first, in id order (the stock's lock order, see db/stock.ts), and the rows are read by
-- a later statement, so they include every change committed to those products before the lock.
-- Products that were not there to lock are left out: one an import creates meanwhile stays
-- unknown to the transaction. PL/pgSQL keeps the plans per server connection, pooler or not.
CREATE FUNCTION lock_sellables(product_ids uuid[], combination_ids uuid[], lock boolean)
RETURNS TABLE (product_id uuid, combination_id uuid, name text, option_names json, price text, discount json, quantity integer,
  is_available boolean, has_combinations boolean, owner_id uuid, owner_available boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  locked uuid[] := product_ids;
BEGIN
  IF lock THEN
    SELECT coalesce(array_agg(l.id), '{}') INTO locked
    FROM (SELECT p.id FROM products p WHERE p.id = any(product_ids) ORDER BY p.id FOR NO KEY UPDATE) l;
  END IF;
  RETURN QUERY
    SELECT p.id, null::uuid, p.name, null::json, p.price::text,
      (SELECT json_build_object('type', d.type, 'value', d.value::text, 'startsAt', d.starts_at, 'endsAt', d.ends_at)
        FROM discounts d WHERE d.product_id = p.id),
      p.quantity, p.is_available, exists (SELECT 1 FROM combinations c WHERE c.product_id = p.id), null::uuid, null::boolean
    FROM products p WHERE p.id = any(locked)
    UNION ALL
    SELECT c.product_id, c.id, p.name,
      (SELECT json_agg(o.name ORDER BY co.position) FROM combination_options co JOIN variant_options o ON o.id = co.option_id
        WHERE co.combination_id = c.id),
      c.price::text,
      coalesce((SELECT json_build_object('type', d.type, 'value', d.value::text, 'startsAt', d.starts_at, 'endsAt', d.ends_at)
          FROM discounts d WHERE d.combination_id = c.id),
        (SELECT json_build_object('type', d.type, 'value', d.value::text, 'startsAt', d.starts_at, 'endsAt', d.ends_at)
          FROM discounts d WHERE d.product_id = p.id)),
      c.quantity, c.is_available, false, c.product_id, p.is_available
    FROM combinations c JOIN products p ON p.id = c.product_id WHERE c.id = any(combination_ids);
END
$$;
