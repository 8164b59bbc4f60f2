-- The metrics gauge of the oldest due webhook delivery reads the due index in its order and
-- stops at the first delivery of an enabled endpoint, however many wait. As a plain `min`
-- over the due rows, with statistics taken while the queue was empty (the claim's case, in
-- migration 0015), it read and sorted every due row at each scrape. Without sorts, the
-- ordered scan is the only plan left. The setting holds for the call alone.
CREATE FUNCTION oldest_due_webhook_delivery_age()
RETURNS double precision
LANGUAGE sql
STABLE
SET enable_sort = off
AS $$
	select extract(epoch from now() - d.next_attempt_at)::float8
	from webhook_deliveries d
	where d.status = 'pending' and d.next_attempt_at <= now()
		and exists (select 1 from webhook_endpoints w where w.id = d.endpoint_id and w.status = 'enabled')
	order by d.next_attempt_at
	limit 1
$$;
