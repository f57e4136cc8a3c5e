-- Webhook endpoints of a tenant. The signing secret is stored encrypted (AES-256-GCM under
-- WEBHOOK_SECRET_KEY), so a dump of the database alone does not yield it.
CREATE TABLE IF NOT EXISTS "webhook_endpoints" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"url" text NOT NULL,
	"events" text[] NOT NULL,
	"description" text,
	"secret_ciphertext" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_endpoints_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
-- The delivery outbox: one row per event and endpoint, written by the triggers below in the same
-- transaction as the change, so only committed changes are announced and every one of them is.
-- seq orders an endpoint's events by commit (see engram_webhook_outbox_lock).
CREATE SEQUENCE IF NOT EXISTS "webhook_delivery_seq";
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "webhook_deliveries" (
	"tenant_id" text NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"seq" bigint DEFAULT nextval('webhook_delivery_seq') NOT NULL,
	"event" text NOT NULL,
	"user_id" text,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL CHECK ("status" IN ('pending', 'succeeded', 'failed')),
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	"txid" bigint DEFAULT txid_current() NOT NULL,
	CONSTRAINT "webhook_deliveries_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "webhook_deliveries_endpoint_fk" FOREIGN KEY ("tenant_id","endpoint_id") REFERENCES "webhook_endpoints"("tenant_id","id") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_pending_idx" ON "webhook_deliveries" USING btree ("endpoint_id","seq") WHERE status = 'pending';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_list_idx" ON "webhook_deliveries" USING btree ("tenant_id","endpoint_id","seq" DESC);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_user_idx" ON "webhook_deliveries" USING btree ("tenant_id","user_id");
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints, webhook_deliveries TO engram_app;
--> statement-breakpoint
GRANT USAGE ON SEQUENCE webhook_delivery_seq TO engram_app;
--> statement-breakpoint
ALTER TABLE webhook_endpoints ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE webhook_endpoints FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON webhook_endpoints
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
CREATE POLICY tenant_isolation ON webhook_deliveries
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
-- The dispatcher finds and leases due deliveries across tenants through the function below (as
-- the owner, like engram_due_jobs); FORCE needs the owner allowed to read and lease them.
CREATE POLICY dispatch_owner ON webhook_deliveries FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true);
--> statement-breakpoint
CREATE POLICY dispatch_owner ON webhook_endpoints FOR SELECT TO CURRENT_USER USING (true);
--> statement-breakpoint
-- Leases up to max_rows deliveries, at most one per endpoint and only an endpoint's oldest pending
-- one (so one endpoint's events go out one at a time, in order), when it is due and not leased.
-- Returns keys only.
CREATE OR REPLACE FUNCTION engram_claim_webhook_deliveries(lease_ms integer, max_rows integer)
RETURNS TABLE (tenant_id text, id uuid, attempts integer)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  WITH heads AS (
    SELECT DISTINCT ON (d.endpoint_id) d.tenant_id, d.id, d.next_attempt_at, d.locked_until
    FROM webhook_deliveries d
    JOIN webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id AND e.enabled
    WHERE d.status = 'pending'
    ORDER BY d.endpoint_id, d.seq
  ), due AS (
    SELECT h.tenant_id, h.id FROM heads h
    WHERE h.next_attempt_at <= now() AND (h.locked_until IS NULL OR h.locked_until < now())
    ORDER BY h.next_attempt_at
    LIMIT max_rows
  )
  UPDATE webhook_deliveries d
  SET locked_until = now() + make_interval(secs => lease_ms / 1000.0), attempts = d.attempts + 1
  FROM due
  WHERE d.tenant_id = due.tenant_id AND d.id = due.id AND d.status = 'pending'
    AND (d.locked_until IS NULL OR d.locked_until < now())
  RETURNING d.tenant_id, d.id, d.attempts
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_claim_webhook_deliveries(integer, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_claim_webhook_deliveries(integer, integer) TO engram_app;
--> statement-breakpoint
-- Counts by status across tenants, for /metrics.
CREATE OR REPLACE FUNCTION engram_webhook_delivery_counts()
RETURNS TABLE (status text, n bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT d.status, count(*) FROM webhook_deliveries d GROUP BY d.status
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_webhook_delivery_counts() FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_webhook_delivery_counts() TO engram_app;
--> statement-breakpoint
-- ISO 8601 in UTC with milliseconds, as the API writes times.
CREATE OR REPLACE FUNCTION engram_iso(ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN ts IS NULL THEN NULL ELSE to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
$$;
--> statement-breakpoint
-- The public Memory of a row (the API's shape), for memory events.
CREATE OR REPLACE FUNCTION engram_memory_json(m memories) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', m.id, 'user_id', m.user_id, 'agent_id', m.agent_id, 'run_id', m.run_id, 'content', m.content,
    'importance', m.importance, 'category', m.category, 'metadata', m.metadata,
    'occurred_at', engram_iso(m.occurred_at), 'created_at', engram_iso(m.created_at), 'updated_at', engram_iso(m.updated_at),
    'valid_to', engram_iso(m.valid_to), 'expires_at', engram_iso(m.expires_at))
$$;
--> statement-breakpoint
-- Whether the tenant of this transaction has an endpoint for the event; if so, serialises the
-- tenant's announcing transactions (an advisory lock held to commit), so seq, taken after it,
-- follows the order of commit and each endpoint receives its events in that order.
CREATE OR REPLACE FUNCTION engram_webhook_outbox_lock(event text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled AND event = ANY (e.events)) THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('engram-webhooks' || chr(31) || current_setting('app.tenant_id', true), 0));
  RETURN true;
END
$$;
--> statement-breakpoint
-- Queues one event for every enabled endpoint of the tenant that takes it, and wakes dispatchers
-- (a NOTIFY is delivered at commit, never for a transaction that rolls back).
CREATE OR REPLACE FUNCTION engram_webhook_enqueue(p_tenant text, p_event text, p_user text, p_data jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event, user_id, payload)
  SELECT p_tenant, e.id, p_event, p_user, jsonb_build_object('type', p_event, 'timestamp', engram_iso(clock_timestamp()), 'data', p_data)
  FROM webhook_endpoints e
  WHERE e.tenant_id = p_tenant AND e.enabled AND p_event = ANY (e.events)
  ORDER BY e.id;
  PERFORM pg_notify('engram_webhooks', '');
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION engram_memory_event_data(m memories) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('memory_id', m.id, 'user_id', m.user_id, 'agent_id', m.agent_id, 'run_id', m.run_id, 'memory', engram_memory_json(m))
$$;
--> statement-breakpoint
-- Before a statement on memories locks any row: take the tenant's announcing lock first, so a
-- transaction never waits for it while holding a memory row another announcer wants (deadlock).
CREATE OR REPLACE FUNCTION engram_memories_webhooks_lock() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled
             AND e.events && ARRAY['memory.created', 'memory.updated', 'memory.superseded', 'memory.deleted']) THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('engram-webhooks' || chr(31) || current_setting('app.tenant_id', true), 0));
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_webhooks_lock ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_webhooks_lock BEFORE INSERT OR UPDATE OR DELETE ON memories
  FOR EACH STATEMENT EXECUTE FUNCTION engram_memories_webhooks_lock();
--> statement-breakpoint
-- Memory events from every write path (direct add, PATCH, delete, extraction, import, expiry):
-- created on insert; superseded when valid_to is set; updated when a visible field changes;
-- deleted on delete. Statement triggers over transition tables: a tenant without an endpoint for
-- the event pays one lookup per statement, not one per row; rows are announced in statement order.
CREATE OR REPLACE FUNCTION engram_memories_webhooks() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r record;
  kind text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled
                 AND e.events && ARRAY['memory.created', 'memory.updated', 'memory.superseded', 'memory.deleted']) THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    FOR r IN SELECT n::memories AS m FROM new_rows n LOOP
      IF engram_webhook_outbox_lock('memory.created') THEN
        PERFORM engram_webhook_enqueue((r.m).tenant_id, 'memory.created', (r.m).user_id, engram_memory_event_data(r.m));
      END IF;
    END LOOP;
  ELSIF TG_OP = 'DELETE' THEN
    FOR r IN SELECT o::memories AS m FROM old_rows o LOOP
      IF engram_webhook_outbox_lock('memory.deleted') THEN
        PERFORM engram_webhook_enqueue((r.m).tenant_id, 'memory.deleted', (r.m).user_id, engram_memory_event_data(r.m));
      END IF;
    END LOOP;
  ELSE
    FOR r IN SELECT n::memories AS m, o::memories AS old FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id LOOP
      IF (r.old).valid_to IS NULL AND (r.m).valid_to IS NOT NULL THEN
        kind := 'memory.superseded';
      ELSIF ((r.old).content, (r.old).importance, (r.old).category, (r.old).metadata, (r.old).expires_at, (r.old).agent_id, (r.old).run_id, (r.old).occurred_at)
            IS DISTINCT FROM ((r.m).content, (r.m).importance, (r.m).category, (r.m).metadata, (r.m).expires_at, (r.m).agent_id, (r.m).run_id, (r.m).occurred_at) THEN
        kind := 'memory.updated';
      ELSE
        CONTINUE;
      END IF;
      IF engram_webhook_outbox_lock(kind) THEN
        PERFORM engram_webhook_enqueue((r.m).tenant_id, kind, (r.m).user_id,
          engram_memory_event_data(r.m) || CASE WHEN kind = 'memory.superseded' THEN jsonb_build_object('superseded_by', (r.m).superseded_by) ELSE '{}'::jsonb END);
      END IF;
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_webhooks ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_webhooks_insert AFTER INSERT ON memories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_memories_webhooks();
--> statement-breakpoint
CREATE TRIGGER memories_webhooks_update AFTER UPDATE ON memories
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_memories_webhooks();
--> statement-breakpoint
CREATE TRIGGER memories_webhooks_delete AFTER DELETE ON memories
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_memories_webhooks();
--> statement-breakpoint
-- A job that finished: listeners of GET /jobs/{id}?wait= hear of it at commit, and
-- job.succeeded / job.failed go to the outbox.
CREATE OR REPLACE FUNCTION engram_jobs_webhooks() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  kind text := 'job.' || NEW.status;
BEGIN
  PERFORM pg_notify('engram_jobs', NEW.tenant_id || chr(31) || NEW.id::text);
  IF engram_webhook_outbox_lock(kind) THEN
    PERFORM engram_webhook_enqueue(NEW.tenant_id, kind, NEW.user_id, jsonb_build_object(
      'job_id', NEW.id, 'user_id', NEW.user_id, 'agent_id', NEW.agent_id, 'run_id', NEW.run_id, 'status', NEW.status,
      'created_at', engram_iso(NEW.created_at), 'finished_at', engram_iso(NEW.finished_at))
      || CASE WHEN NEW.status = 'succeeded' THEN jsonb_build_object('result', NEW.result) ELSE jsonb_build_object('error', NEW.error) END);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS extraction_jobs_webhooks ON extraction_jobs;
--> statement-breakpoint
CREATE TRIGGER extraction_jobs_webhooks AFTER UPDATE OF status ON extraction_jobs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('succeeded', 'failed'))
  EXECUTE FUNCTION engram_jobs_webhooks();
--> statement-breakpoint
-- A user's erasure: its receipt (erasure id and counts, nothing about who) is the event.
CREATE OR REPLACE FUNCTION engram_erasures_webhooks() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF engram_webhook_outbox_lock('user.erased') THEN
    PERFORM engram_webhook_enqueue(NEW.tenant_id, 'user.erased', NULL,
      jsonb_build_object('erasure_id', NEW.id, 'counts', NEW.counts));
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS erasures_webhooks ON erasures;
--> statement-breakpoint
CREATE TRIGGER erasures_webhooks AFTER INSERT ON erasures
  FOR EACH ROW WHEN (NEW.scope = 'user')
  EXECUTE FUNCTION engram_erasures_webhooks();
