CREATE TABLE "product_list_page_changes" (
	"list" text NOT NULL,
	"page" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "product_list_pages" (
	"list" text NOT NULL,
	"page" integer NOT NULL,
	"body" text,
	"etags" text,
	"product_ids" text,
	"price_changes_at" timestamp with time zone,
	"next_sort_name" text,
	CONSTRAINT "product_list_pages_list_page_pk" PRIMARY KEY("list","page")
);
--> statement-breakpoint
CREATE INDEX "product_list_page_changes_page_idx" ON "product_list_page_changes" USING btree ("list","page");--> statement-breakpoint
-- Every page of the catalogue as it stands, unbuilt and marked, so the background job builds them.
INSERT INTO "product_list_pages" ("list", "page")
  SELECT '', g FROM generate_series(1, (SELECT (coalesce(max("position"), 0) + 24) / 25 FROM "product_list_positions" WHERE "list" = '')) g;--> statement-breakpoint
INSERT INTO "product_list_page_changes" ("list", "page") SELECT "list", "page" FROM "product_list_pages";
--> statement-breakpoint
-- A page's body is about 20 KB of JSON, stored compressed: lz4 builds a page in about half
-- the time pglz takes (0.43 against 0.76 ms at 100,000 products) and reads as fast. A server
-- built without lz4 (or an embedded one) keeps its default.
DO $$ BEGIN
  ALTER TABLE "product_list_pages" ALTER COLUMN "body" SET COMPRESSION lz4;
EXCEPTION WHEN others THEN NULL;
END $$;
