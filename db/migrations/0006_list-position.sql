ALTER TABLE "products" ADD COLUMN "list_position" integer;--> statement-breakpoint
CREATE INDEX "products_list_position_idx" ON "products" USING btree ("list_position");--> statement-breakpoint
UPDATE "products" p SET "list_position" = ranked.n FROM (SELECT "id", row_number() OVER (ORDER BY lower("name"), "id") AS n FROM "products") ranked WHERE p."id" = ranked."id";
