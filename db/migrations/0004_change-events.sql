CREATE TABLE "change_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"position" bigint,
	"type" text NOT NULL,
	"resource_id" uuid NOT NULL,
	"api_key_id" uuid,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "change_feed" (
	"id" integer PRIMARY KEY NOT NULL,
	"cursor_secret" text NOT NULL,
	"pruned_through" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "change_feed_one_row" CHECK ("change_feed"."id" = 1)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "change_events_position_uq" ON "change_events" USING btree ("position");--> statement-breakpoint
CREATE INDEX "change_events_unpublished_idx" ON "change_events" USING btree ("seq") WHERE "change_events"."position" is null;--> statement-breakpoint
CREATE INDEX "change_events_occurred_idx" ON "change_events" USING btree ("occurred_at");--> statement-breakpoint
INSERT INTO "change_feed" ("id", "cursor_secret") VALUES (1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
