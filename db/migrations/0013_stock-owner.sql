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
