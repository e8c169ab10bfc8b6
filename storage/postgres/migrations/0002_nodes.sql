-- Several nodes on one database: which memvault processes run, and which one owns what.

-- One row per running process (its id is unique per start: a restarted node is a new
-- row). `heartbeat_at` is the database's clock at its last heartbeat.
CREATE TABLE nodes (
    id text COLLATE "C" PRIMARY KEY,
    advertise_url text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    -- What the node reported at its last heartbeat (JSON: its jobs, its requests).
    stats text NOT NULL DEFAULT '{}'
);

-- Ownership with fencing. `name` is what is owned (`tenant:<id>` for a tenant's actors
-- and data, `cluster:<work>` for work that runs on one node of all). `epoch` grows by one
-- each time the owner changes, never on a renewal; every write of a tenant's data checks,
-- in its own transaction, that its node still holds the tenant at the epoch it claimed,
-- so a node that lost a lease can never commit under it. A lease is free once
-- `expires_at` (the database's clock) has passed; releasing sets it in the past and keeps
-- the row, so the epoch never goes back.
CREATE TABLE leases (
    name text COLLATE "C" PRIMARY KEY,
    node_id text COLLATE "C" NOT NULL,
    epoch bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX leases_by_node ON leases (node_id);

-- Any node finds the tenant of a presented key (to send the request to the tenant's
-- owner) by the key's hash, without loading the tenant.
ALTER TABLE api_keys ADD COLUMN key_hash text COLLATE "C";
UPDATE api_keys SET key_hash = convert_from(record, 'UTF8')::jsonb ->> 'key_hash';
CREATE INDEX api_keys_by_hash ON api_keys (key_hash);
