-- The dashboard's sign-in sessions, by the SHA-256 of their id (the id itself is only in
-- the browser's cookie). Any node finds a session's tenant here to send the request to
-- the tenant's node (`TenantLookup::Session`).
CREATE TABLE sessions (
    id_hash text COLLATE "C" PRIMARY KEY,
    tenant_id text COLLATE "C" NOT NULL,
    expires_at timestamptz NOT NULL,
    record bytea NOT NULL
);
CREATE INDEX sessions_by_tenant ON sessions (tenant_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
