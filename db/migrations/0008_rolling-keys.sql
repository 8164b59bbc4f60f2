ALTER TABLE "api_keys" ADD COLUMN "previous_key_hash" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "previous_key_expires_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_previous_key_hash_idx" ON "api_keys" USING btree ("previous_key_hash");