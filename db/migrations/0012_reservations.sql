CREATE TABLE "reservation_items" (
	"reservation_id" uuid NOT NULL,
	"line" integer NOT NULL,
	"product_id" uuid NOT NULL,
	"combination_id" uuid,
	"quantity" integer NOT NULL,
	"held" integer NOT NULL,
	CONSTRAINT "reservation_items_reservation_id_line_pk" PRIMARY KEY("reservation_id","line"),
	CONSTRAINT "reservation_items_held" CHECK ("reservation_items"."held" >= 0 and "reservation_items"."held" <= "reservation_items"."quantity")
);
--> statement-breakpoint
CREATE TABLE "reservations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"api_key_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"status" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"order_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reservations_status" CHECK ("reservations"."status" in ('active', 'consumed', 'released', 'expired')),
	CONSTRAINT "reservations_mode" CHECK ("reservations"."mode" in ('live', 'test'))
);
--> statement-breakpoint
ALTER TABLE "reservation_items" ADD CONSTRAINT "reservation_items_reservation_id_reservations_id_fk" FOREIGN KEY ("reservation_id") REFERENCES "public"."reservations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "reservations" ADD CONSTRAINT "reservations_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "reservation_items_stock_idx" ON "reservation_items" USING btree (coalesce("combination_id", "product_id"));--> statement-breakpoint
CREATE INDEX "reservations_active_expires_idx" ON "reservations" USING btree ("expires_at") WHERE "reservations"."status" = 'active';--> statement-breakpoint
CREATE INDEX "reservations_active_key_idx" ON "reservations" USING btree ("api_key_id") WHERE "reservations"."status" = 'active';