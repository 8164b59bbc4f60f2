CREATE TABLE "product_availability_blocks" (
	"block" integer PRIMARY KEY NOT NULL,
	"available" integer NOT NULL,
	"unavailable" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "product_list_positions_catalogue_product_idx" ON "product_list_positions" USING btree ("product_id") WHERE "product_list_positions"."list" = '';--> statement-breakpoint
-- The counts of the catalogue as it stands (renumbering counts them from now on).
INSERT INTO "product_availability_blocks" ("block", "available", "unavailable")
  SELECT (l."position" - 1) / 1000, count(*) FILTER (WHERE p."available"), count(*) FILTER (WHERE NOT p."available")
  FROM "product_list_positions" l JOIN "products" p ON p."id" = l."product_id"
  WHERE l."list" = ''
  GROUP BY 1;
