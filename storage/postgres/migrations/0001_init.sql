-- memvault's first schema: one table per record kind.
--
-- Every record is kept whole as `record bytea`: the exact serde_json bytes memvault wrote
-- (jsonb would reorder keys, normalise numbers and refuse \u0000 in strings; the store
-- promises that a record reads back equal to the one written). Next to it, the columns
-- that queries filter or sort on. Text keys use the "C" collation so that listings sort
-- by bytes, like the embedded store's keys, whatever the database's locale.

CREATE TABLE tenants (
    id text COLLATE "C" PRIMARY KEY,
    record bytea NOT NULL
);

CREATE TABLE api_keys (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE collections (
    tenant_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    -- Reserved for fencing writers of one collection (multi-node); 0 until then.
    version bigint NOT NULL DEFAULT 0,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

-- Set on every insert or replace of a memory: a replica catches up with `seq > n`.
CREATE SEQUENCE memory_seq AS bigint;

CREATE TABLE memories (
    tenant_id text COLLATE "C" NOT NULL,
    collection text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    seq bigint NOT NULL DEFAULT nextval('memory_seq'),
    record bytea NOT NULL,
    -- f32 little-endian, back to back.
    embedding bytea NOT NULL,
    PRIMARY KEY (tenant_id, collection, id)
);
CREATE INDEX memories_by_seq ON memories (tenant_id, collection, seq);

-- The model of a collection's staged re-embedding; its vectors below.
CREATE TABLE staged_models (
    tenant_id text COLLATE "C" NOT NULL,
    collection text COLLATE "C" NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, collection)
);

CREATE TABLE staged_embeddings (
    tenant_id text COLLATE "C" NOT NULL,
    collection text COLLATE "C" NOT NULL,
    -- The memory's index key (a u64 below 2^63).
    key bigint NOT NULL,
    id text COLLATE "C" NOT NULL,
    embedding bytea NOT NULL,
    PRIMARY KEY (tenant_id, collection, key)
);

CREATE TABLE tenant_settings (
    tenant_id text COLLATE "C" PRIMARY KEY,
    record bytea NOT NULL
);

-- Usage rows are counters, added to in place (`INSERT ... ON CONFLICT DO UPDATE`).
CREATE TABLE usage (
    tenant_id text COLLATE "C" NOT NULL,
    month text COLLATE "C" NOT NULL,
    purpose text COLLATE "C" NOT NULL,
    own_llm boolean NOT NULL,
    model text COLLATE "C" NOT NULL,
    calls bigint NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    cost_usd double precision NOT NULL,
    PRIMARY KEY (tenant_id, month, purpose, own_llm, model)
);

CREATE TABLE extract_jobs (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    finished boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX extract_jobs_unfinished ON extract_jobs (created_at, id) WHERE NOT finished;
CREATE INDEX extract_jobs_finished ON extract_jobs (updated_at) WHERE finished;

CREATE TABLE ingest_batches (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    finished boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX ingest_batches_unfinished ON ingest_batches (created_at, id) WHERE NOT finished;
CREATE INDEX ingest_batches_finished ON ingest_batches (updated_at) WHERE finished;

CREATE TABLE imports (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    finished boolean NOT NULL,
    created_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX imports_unfinished ON imports (created_at, id) WHERE NOT finished;

-- An unfinished import's items; removed in the write that finishes it.
CREATE TABLE import_payloads (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE outbox (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_by_age ON outbox (created_at, id);

CREATE TABLE audit (
    tenant_id text COLLATE "C" NOT NULL,
    -- UUID v7: by time.
    id text COLLATE "C" NOT NULL,
    at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_by_age ON audit (at);

CREATE TABLE mails (
    id text COLLATE "C" PRIMARY KEY,
    -- The tenant the mail is about, if any.
    tenant_id text COLLATE "C",
    created_at timestamptz NOT NULL,
    record bytea NOT NULL
);
CREATE INDEX mails_by_age ON mails (created_at, id);
CREATE INDEX mails_by_tenant ON mails (tenant_id);

CREATE TABLE reveals (
    token_hash text COLLATE "C" PRIMARY KEY,
    tenant_id text COLLATE "C" NOT NULL,
    expires_at timestamptz NOT NULL,
    record bytea NOT NULL
);
CREATE INDEX reveals_by_tenant ON reveals (tenant_id);

-- Handled outside events (a Stripe event, an inbound message id).
CREATE TABLE events (
    source text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    at timestamptz NOT NULL,
    PRIMARY KEY (source, id)
);
CREATE INDEX events_by_age ON events (at);

-- A tenant's mail-in address, found by tenant or by the hash of its local part.
CREATE TABLE email_addresses (
    tenant_id text COLLATE "C" PRIMARY KEY,
    local_hash text COLLATE "C" NOT NULL UNIQUE,
    record bytea NOT NULL
);

CREATE TABLE connections (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE sync_runs (
    tenant_id text COLLATE "C" NOT NULL,
    connection_id text COLLATE "C" NOT NULL,
    -- UUID v7: by time.
    id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, connection_id, id)
);
CREATE INDEX sync_runs_by_age ON sync_runs (created_at);

CREATE TABLE synced_records (
    tenant_id text COLLATE "C" NOT NULL,
    connection_id text COLLATE "C" NOT NULL,
    record_id text COLLATE "C" NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (tenant_id, connection_id, record_id)
);

CREATE TABLE oauth_states (
    state_hash text COLLATE "C" PRIMARY KEY,
    tenant_id text COLLATE "C" NOT NULL,
    expires_at timestamptz NOT NULL,
    record bytea NOT NULL
);
