CREATE TABLE "erasures" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"subject_hash" text NOT NULL,
	"scope" text NOT NULL,
	"counts" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "erasures_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "extraction_jobs" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"user_id" text NOT NULL,
	"agent_id" text,
	"run_id" text,
	"idempotency_key" text,
	"body_hash" text NOT NULL,
	"payload" jsonb,
	"status" text DEFAULT 'queued' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"run_after" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "extraction_jobs_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "memories" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"user_id" text NOT NULL,
	"agent_id" text,
	"run_id" text,
	"content" text NOT NULL,
	"content_hash" text NOT NULL,
	"embedding" vector NOT NULL,
	"search_text" "tsvector" GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED NOT NULL,
	"importance" smallint DEFAULT 5 NOT NULL,
	"category" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"valid_to" timestamp with time zone,
	"superseded_by" uuid,
	"expires_at" timestamp with time zone,
	"source_job_id" uuid,
	"source" jsonb,
	CONSTRAINT "memories_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "memory_events" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"memory_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"event" text NOT NULL,
	"old_content" text,
	"new_content" text,
	"job_id" uuid,
	"actor" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "memory_events_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "extraction_jobs_idempotency_uq" ON "extraction_jobs" USING btree ("tenant_id","idempotency_key");--> statement-breakpoint
CREATE INDEX "extraction_jobs_user_idx" ON "extraction_jobs" USING btree ("tenant_id","user_id");--> statement-breakpoint
CREATE INDEX "extraction_jobs_pending_idx" ON "extraction_jobs" USING btree ("status","run_after") WHERE status in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "memories_current_user_idx" ON "memories" USING btree ("tenant_id","user_id","created_at" DESC NULLS LAST,"id") WHERE valid_to is null;--> statement-breakpoint
CREATE INDEX "memories_user_idx" ON "memories" USING btree ("tenant_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "memories_current_content_uq" ON "memories" USING btree ("tenant_id","user_id","content_hash") WHERE valid_to is null;--> statement-breakpoint
CREATE INDEX "memories_search_text_idx" ON "memories" USING gin ("search_text");--> statement-breakpoint
CREATE INDEX "memory_events_memory_idx" ON "memory_events" USING btree ("tenant_id","memory_id","created_at");--> statement-breakpoint
CREATE INDEX "memory_events_user_idx" ON "memory_events" USING btree ("tenant_id","user_id");