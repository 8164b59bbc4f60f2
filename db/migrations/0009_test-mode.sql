CREATE SEQUENCE "public"."test_order_number_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 100001 CACHE 1;--> statement-breakpoint
ALTER TABLE "orders" DROP CONSTRAINT "orders_order_number_unique";--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "orders_number_mode_uq" ON "orders" USING btree ("order_number","mode");--> statement-breakpoint
CREATE INDEX "orders_test_created_idx" ON "orders" USING btree ("created_at") WHERE "orders"."mode" = 'test';--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_mode" CHECK ("api_keys"."mode" in ('live', 'test'));--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_mode" CHECK ("orders"."mode" in ('live', 'test'));