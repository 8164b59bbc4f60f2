CREATE SEQUENCE "public"."catalog_reset_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "product_documents" (
	"product_id" uuid PRIMARY KEY NOT NULL,
	"body" text NOT NULL,
	"etag" text NOT NULL,
	"price_changes_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "product_documents" ADD CONSTRAINT "product_documents_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "public"."products"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "product_documents_price_changes_idx" ON "product_documents" USING btree ("price_changes_at") WHERE "product_documents"."price_changes_at" is not null;