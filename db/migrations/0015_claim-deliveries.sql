-- Claiming webhook deliveries must read the due index in its order and stop at the claim's
-- limit, however many wait. A queue is often empty when its statistics are taken; the planner
-- then judged the due rows few and read every one of them, sorted, to claim a handful: 3,000
-- rows to claim 5, 8 ms a claim with 7,500 waiting, so the more deliveries fell behind the
-- slower each claim got (500 deliveries a second against 2,000 with a fresh plan). Without
-- sorts, that ordered scan is the only plan left. The setting holds for the call alone.
CREATE FUNCTION claim_webhook_deliveries(claim_limit integer, lease_seconds double precision)
RETURNS TABLE (
	id text, endpoint_id uuid, "position" text, type text, resource_id uuid, data jsonb, occurred_at text,
	attempts integer, url text, secret text, previous_secret text, lease text
)
LANGUAGE sql
SET enable_sort = off
AS $$
	with due as (
		select d.id from webhook_deliveries d
		where d.status = 'pending' and d.next_attempt_at <= now()
			and exists (select 1 from webhook_endpoints w where w.id = d.endpoint_id and w.status = 'enabled')
		order by d.next_attempt_at limit claim_limit
		for update of d skip locked
	)
	update webhook_deliveries d
	set lease_until = now() + make_interval(secs => lease_seconds), next_attempt_at = now() + make_interval(secs => lease_seconds)
	from due, webhook_endpoints w
	where d.id = due.id and w.id = d.endpoint_id
	returning d.id::text, d.endpoint_id, d.position::text, d.type, d.resource_id, d.data, d.occurred_at::text, d.attempts, w.url, w.secret,
		case when w.previous_secret_expires_at > now() then w.previous_secret end, d.lease_until::text
$$;
