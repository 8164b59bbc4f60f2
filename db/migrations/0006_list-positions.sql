CREATE TABLE "product_list_positions" (
	"list" text NOT NULL,
	"position" integer NOT NULL,
	"product_id" uuid NOT NULL,
	CONSTRAINT "product_list_positions_list_position_pk" PRIMARY KEY("list","position")
);
--> statement-breakpoint
DROP INDEX "products_available_name_idx";--> statement-breakpoint
CREATE INDEX "products_available_name_idx" ON "products" USING btree ("available",lower("name"),"id","name");
--> statement-breakpoint
INSERT INTO "product_list_positions" ("list", "position", "product_id")
  SELECT '', row_number() OVER (ORDER BY lower("name"), "id"), "id" FROM "products"
  UNION ALL
  SELECT 'brand:' || "brand_id"::text, row_number() OVER (PARTITION BY "brand_id" ORDER BY lower("name"), "id"), "id" FROM "products" WHERE "brand_id" IS NOT NULL
  UNION ALL
  SELECT 'category:' || pc."category_id"::text, row_number() OVER (PARTITION BY pc."category_id" ORDER BY lower(p."name"), p."id"), p."id"
  FROM "product_categories" pc JOIN "products" p ON p."id" = pc."product_id";
