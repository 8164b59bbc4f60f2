CREATE TABLE "product_list_positions" (
	"position" integer PRIMARY KEY NOT NULL,
	"product_id" uuid NOT NULL
);
--> statement-breakpoint
INSERT INTO "product_list_positions" ("position", "product_id") SELECT row_number() OVER (ORDER BY lower("name"), "id"), "id" FROM "products";
