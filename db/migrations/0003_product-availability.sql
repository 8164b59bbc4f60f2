ALTER TABLE "products" ADD COLUMN "available" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "products" ADD COLUMN "content_hash" text;--> statement-breakpoint
CREATE INDEX "discounts_starts_idx" ON "discounts" USING btree ("starts_at");--> statement-breakpoint
CREATE INDEX "discounts_ends_idx" ON "discounts" USING btree ("ends_at");--> statement-breakpoint
CREATE INDEX "products_available_name_idx" ON "products" USING btree ("available",lower("name"),"id");--> statement-breakpoint
UPDATE "products" p SET "available" = p."is_available" AND (CASE WHEN EXISTS (SELECT 1 FROM "combinations" c WHERE c."product_id" = p."id") THEN EXISTS (SELECT 1 FROM "combinations" c WHERE c."product_id" = p."id" AND c."is_available" AND (c."quantity" IS NULL OR c."quantity" > 0)) ELSE (p."quantity" IS NULL OR p."quantity" > 0) END);
