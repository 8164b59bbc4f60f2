-- An order's conditional stock decrements in one call: each entry's units are taken, in the
-- order given (callers sort by id, so concurrent orders lock rows in the same order and never
-- deadlock), only when at least that many are left. Returns the 1-based position of the first
-- entry that could not be taken (nothing after it is tried; the caller rolls back the rest),
-- 0 when all were. PL/pgSQL keeps the two UPDATEs' plans for the life of a server
-- connection, so a transaction pooler that forbids prepared statements does not re-plan them.
CREATE FUNCTION take_stock(ids uuid[], quantities integer[], combination boolean[]) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
    IF combination[i] THEN
      UPDATE combinations SET quantity = quantity - quantities[i] WHERE id = ids[i] AND quantity >= quantities[i];
    ELSE
      UPDATE products SET quantity = quantity - quantities[i] WHERE id = ids[i] AND quantity >= quantities[i];
    END IF;
    IF NOT FOUND THEN
      RETURN i;
    END IF;
  END LOOP;
  RETURN 0;
END
$$;
