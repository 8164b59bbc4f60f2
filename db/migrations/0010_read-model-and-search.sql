CREATE SEQUENCE "public"."catalog_reset_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "product_documents" (
	"product_id" uuid PRIMARY KEY NOT NULL,
	"body" text NOT NULL,
	"etag" text NOT NULL,
	"price_changes_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "product_search" (
	"product_id" uuid PRIMARY KEY NOT NULL,
	"sort_name" text NOT NULL,
	"search_text" text NOT NULL
);
--> statement-breakpoint
INSERT INTO "product_search" ("product_id", "sort_name", "search_text") SELECT "id", lower("name"), "search_text" FROM "products";
--> statement-breakpoint
DROP INDEX "products_search_trgm_idx";--> statement-breakpoint
ALTER TABLE "product_documents" ADD CONSTRAINT "product_documents_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "public"."products"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "product_search" ADD CONSTRAINT "product_search_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "public"."products"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "product_documents_price_changes_idx" ON "product_documents" USING btree ("price_changes_at") WHERE "product_documents"."price_changes_at" is not null;--> statement-breakpoint
CREATE INDEX "product_search_trgm_idx" ON "product_search" USING gin ("search_text" gin_trgm_ops);--> statement-breakpoint
ALTER TABLE "products" DROP COLUMN "search_text";