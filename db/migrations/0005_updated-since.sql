CREATE INDEX "orders_key_updated_idx" ON "orders" USING btree ("api_key_id","updated_at");--> statement-breakpoint
CREATE INDEX "products_updated_idx" ON "products" USING btree ("updated_at");