//! Several nodes on one database: the node registry, leases, and the fence every write
//! of a tenant's data passes (`migrations/0002_nodes.sql`).
//!
//! A lease says which node owns something: a tenant (its actors, its caches, the only
//! writer of its data) or a piece of cluster-wide work. Placement is decided by claims;
//! correctness by the epoch. A store made with [`PgStore::fenced_as`] remembers the epoch
//! of every lease it claimed, and each write of a tenant's data first takes
//! `SELECT ... FOR SHARE` on the tenant's lease row, in the write's own transaction,
//! checking that this node still holds it at that epoch. A claim by another node updates
//! that row, so it waits for a write in flight to commit, and every write after it fails
//! with [`StorageError::Fenced`]: a node that was paused past its lease, or cut off from
//! the database, can never commit under a lease it lost. Only the database's clock
//! decides expiry.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use memvault_storage::error::Result;
use memvault_storage::records::TenantId;
use memvault_storage::StorageError;
use tokio_postgres::GenericClient;

use crate::{pg, PgStore};

/// The lease name of a tenant: its actors and the writes of its data.
pub fn tenant_lease(tenant: &TenantId) -> String {
    format!("tenant:{tenant}")
}

/// What a request that carries no API key names its tenant by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantLookup {
    /// The tenant's id itself (a Stripe event that carries it).
    Tenant(String),
    /// A connector's OAuth flow: the hex SHA-256 of its `state`.
    OAuthState(String),
    /// A reveal link: the hex SHA-256 of its token.
    Reveal(String),
    /// A dashboard session: the hex SHA-256 of its cookie's id.
    Session(String),
    /// A mail-in drop address: the hex SHA-256 of its lower-cased local part.
    MailAddress(String),
    /// The account's email, compared without case.
    Email(String),
    /// A Stripe customer id, as the tenant's billing settings keep it.
    StripeCustomer(String),
}

/// A lease as the database has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub name: String,
    pub node: String,
    pub epoch: i64,
    pub acquired_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Whether `expires_at` had not passed when it was read (the database's clock).
    pub live: bool,
    /// The holder's address for forwarding, while it is registered.
    pub advertise_url: Option<String>,
}

/// A running node as the database has it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRecord {
    pub id: String,
    pub advertise_url: String,
    pub started_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
    /// Seconds since its last heartbeat (the database's clock).
    pub silent_for: f64,
    /// What it reported at its last heartbeat (JSON).
    pub stats: String,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This node holds it now, at this epoch.
    Held(Lease),
    /// Another node holds it and its lease has not expired.
    Taken(Lease),
}

/// This process's identity and the epochs of the leases it holds.
pub(crate) struct Fence {
    node: String,
    held: RwLock<HashMap<String, i64>>,
}

impl Fence {
    pub(crate) fn new(node: &str) -> Self {
        Self {
            node: node.to_owned(),
            held: RwLock::new(HashMap::new()),
        }
    }

    fn epoch(&self, name: &str) -> Option<i64> {
        self.held
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(name)
            .copied()
    }

    fn hold(&self, name: &str, epoch: i64) {
        self.held
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(name.to_owned(), epoch);
    }

    fn forget(&self, name: &str) {
        self.held
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(name);
    }

    fn forget_all(&self) {
        self.held
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// Of the leases `asked` (held when a renewal started; one claimed since is not
    /// among them), keeps those `renewed` lists at the same epoch; forgets and returns the
    /// others.
    fn keep(&self, asked: &HashMap<String, i64>, renewed: &HashMap<String, i64>) -> Vec<String> {
        let mut held = self
            .held
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let lost: Vec<String> = held
            .iter()
            .filter(|(name, epoch)| {
                asked.get(*name) == Some(epoch) && renewed.get(*name) != Some(epoch)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in &lost {
            held.remove(name);
        }
        lost
    }
}

fn millis(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

fn lease_of(row: &tokio_postgres::Row) -> Lease {
    Lease {
        name: row.get("name"),
        node: row.get("node_id"),
        epoch: row.get("epoch"),
        acquired_at: row.get("acquired_at"),
        expires_at: row.get("expires_at"),
        live: row.get("live"),
        advertise_url: row.get("advertise_url"),
    }
}

const LEASE_COLUMNS: &str = "l.name, l.node_id, l.epoch, l.acquired_at, l.expires_at,
     l.expires_at > now() AS live, n.advertise_url";

/// The lease on `name` with its holder's address, if it was ever claimed.
async fn lease_named(client: &impl GenericClient, name: &str) -> Result<Option<Lease>> {
    let row = client
        .query_opt(
            &format!(
                "SELECT {LEASE_COLUMNS} FROM leases l
                 LEFT JOIN nodes n ON n.id = l.node_id WHERE l.name = $1"
            ),
            &[&name],
        )
        .await
        .map_err(pg)?;
    Ok(row.as_ref().map(lease_of))
}

impl PgStore {
    /// This store as node `node` of several: its leases are remembered and every write of
    /// a tenant's data is fenced by the tenant's lease (see the module docs). `node` must
    /// be unique per process start.
    pub fn fenced_as(mut self, node: &str) -> Self {
        self.fence = Some(std::sync::Arc::new(Fence::new(node)));
        self
    }

    /// The node this store writes as, when fenced.
    pub fn node_id(&self) -> Option<&str> {
        self.fence.as_ref().map(|fence| fence.node.as_str())
    }

    fn fence_of(&self) -> Result<&Fence> {
        self.fence
            .as_deref()
            .ok_or_else(|| StorageError::Backend("this store is not a node's (fenced_as)".into()))
    }

    /// Checks, inside the write's transaction `tx`, that this node still holds `tenant`'s
    /// lease at the epoch it claimed, and keeps the lease row shared-locked until the
    /// write commits. Nothing to check on a store that is not fenced.
    pub(crate) async fn check_fence(
        &self,
        tx: &impl GenericClient,
        tenant: &TenantId,
    ) -> Result<()> {
        let Some(fence) = self.fence.as_deref() else {
            return Ok(());
        };
        let name = tenant_lease(tenant);
        let Some(epoch) = fence.epoch(&name) else {
            return Err(StorageError::Fenced(format!(
                "node {} does not own tenant {tenant}",
                fence.node
            )));
        };
        let row = tx
            .query_opt(
                "SELECT 1 FROM leases WHERE name = $1 AND node_id = $2 AND epoch = $3 FOR SHARE",
                &[&name, &fence.node, &epoch],
            )
            .await
            .map_err(pg)?;
        if row.is_none() {
            fence.forget(&name);
            return Err(StorageError::Fenced(format!(
                "node {} lost tenant {tenant} (epoch {epoch}) to another node",
                fence.node
            )));
        }
        Ok(())
    }

    /// Whether this node holds `name`, as far as it knows (claimed, and not found lost by
    /// a heartbeat or a fenced write since).
    pub fn holds(&self, name: &str) -> bool {
        self.fence
            .as_deref()
            .is_some_and(|fence| fence.epoch(name).is_some())
    }

    /// Forgets every lease this node holds, without touching the database (it cannot be
    /// reached): every fenced write fails until the next claim.
    pub fn forget_leases(&self) {
        if let Some(fence) = self.fence.as_deref() {
            fence.forget_all();
        }
    }

    /// The names of the leases this node holds, as far as it knows.
    pub fn held_leases(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .fence
            .as_deref()
            .map(|fence| {
                fence
                    .held
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .keys()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Registers this node (or refreshes its row) with the address other nodes forward to.
    pub fn register_node(&self, advertise_url: &str) -> Result<()> {
        let node = self.fence_of()?.node.clone();
        self.execute(
            "INSERT INTO nodes (id, advertise_url) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET advertise_url = excluded.advertise_url,
                 heartbeat_at = now()",
            &[&node, &advertise_url],
        )?;
        Ok(())
    }

    /// One heartbeat: refreshes this node's row and renews every lease it holds for `ttl`,
    /// in one transaction. Returns the leases it had and no longer holds (taken by another
    /// node after they expired): their owner's state must be dropped at once. A lease the
    /// database still gives this node but the node no longer serves is left to expire.
    /// `stats` (JSON) is stored on the node's row for the other nodes to show.
    pub fn heartbeat(&self, ttl: Duration, stats: &str) -> Result<Vec<String>> {
        let fence = self.fence_of()?;
        let asked: HashMap<String, i64> = fence
            .held
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let held: Vec<String> = asked.keys().cloned().collect();
        let renewed = self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute(
                "UPDATE nodes SET heartbeat_at = now(), stats = $2 WHERE id = $1",
                &[&fence.node, &stats],
            )
            .await
            .map_err(pg)?;
            let rows = tx
                .query(
                    "UPDATE leases SET expires_at = now() + $2 * interval '1 millisecond'
                     WHERE node_id = $1 AND name = ANY($3) RETURNING name, epoch",
                    &[&fence.node, &millis(ttl), &held],
                )
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(rows
                .iter()
                .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1)))
                .collect::<HashMap<_, _>>())
        })?;
        Ok(fence.keep(&asked, &renewed))
    }

    /// Claims `name` for `ttl` when it is free (never claimed, released or expired) or
    /// already this node's. A change of owner bumps the epoch; a renewal keeps it.
    pub fn claim(&self, name: &str, ttl: Duration) -> Result<Claim> {
        let fence = self.fence_of()?;
        let (claimed, lease) = self.block(async {
            let client = self.client().await?;
            let claimed = client
                .query_opt(
                    "INSERT INTO leases AS l (name, node_id, epoch, acquired_at, expires_at)
                     VALUES ($1, $2, 1, now(), now() + $3 * interval '1 millisecond')
                     ON CONFLICT (name) DO UPDATE SET
                         node_id = excluded.node_id,
                         epoch = CASE WHEN l.node_id = excluded.node_id THEN l.epoch
                                      ELSE l.epoch + 1 END,
                         acquired_at = CASE WHEN l.node_id = excluded.node_id
                                            THEN l.acquired_at ELSE now() END,
                         expires_at = excluded.expires_at
                     WHERE l.node_id = excluded.node_id OR l.expires_at <= now()
                     RETURNING name",
                    &[&name, &fence.node, &millis(ttl)],
                )
                .await
                .map_err(pg)?
                .is_some();
            let lease = lease_named(&**client, name)
                .await?
                .ok_or_else(|| StorageError::Backend(format!("lease {name} vanished")))?;
            Ok((claimed, lease))
        })?;
        if claimed && lease.node == fence.node {
            fence.hold(name, lease.epoch);
            Ok(Claim::Held(lease))
        } else {
            Ok(Claim::Taken(lease))
        }
    }

    /// Gives up `name` (a graceful hand-off): it is free at once, and its epoch stays.
    pub fn release(&self, name: &str) -> Result<()> {
        let fence = self.fence_of()?;
        fence.forget(name);
        self.execute(
            "UPDATE leases SET expires_at = now() - interval '1 millisecond'
             WHERE name = $1 AND node_id = $2",
            &[&name, &fence.node],
        )?;
        Ok(())
    }

    /// Leaves the cluster: releases every lease this node holds and removes its row.
    pub fn leave(&self) -> Result<()> {
        let fence = self.fence_of()?;
        fence.forget_all();
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute(
                "UPDATE leases SET expires_at = now() - interval '1 millisecond'
                 WHERE node_id = $1",
                &[&fence.node],
            )
            .await
            .map_err(pg)?;
            tx.execute("DELETE FROM nodes WHERE id = $1", &[&fence.node])
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)
        })
    }

    /// The lease on `name`, if it was ever claimed.
    pub fn lease(&self, name: &str) -> Result<Option<Lease>> {
        self.block(async {
            let client = self.client().await?;
            lease_named(&**client, name).await
        })
    }

    /// Every live lease, by name.
    pub fn live_leases(&self) -> Result<Vec<Lease>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {LEASE_COLUMNS} FROM leases l
                         LEFT JOIN nodes n ON n.id = l.node_id
                         WHERE l.expires_at > now() ORDER BY l.name"
                    ),
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(lease_of).collect())
        })
    }

    /// Every registered node, oldest first.
    pub fn nodes(&self) -> Result<Vec<NodeRecord>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, advertise_url, started_at, heartbeat_at,
                         EXTRACT(EPOCH FROM now() - heartbeat_at)::float8, stats
                     FROM nodes ORDER BY started_at, id",
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|row| NodeRecord {
                    id: row.get(0),
                    advertise_url: row.get(1),
                    started_at: row.get(2),
                    heartbeat_at: row.get(3),
                    silent_for: row.get(4),
                    stats: row.get(5),
                })
                .collect())
        })
    }

    /// The tenant whose key has this hash (hex SHA-256 of the secret), whatever the key's
    /// state: the tenant's owner decides whether it authenticates.
    pub fn tenant_of_key(&self, key_hash: &str) -> Result<Option<TenantId>> {
        self.block(async {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT tenant_id FROM api_keys WHERE key_hash = $1 LIMIT 1",
                    &[&key_hash],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|row| TenantId::from_stored(row.get::<_, String>(0))))
        })
    }

    /// The tenant a request without an API key is about, found by what it names (several
    /// nodes send it to that tenant's node); `None` when no tenant has it.
    pub fn tenant_named(&self, lookup: &TenantLookup) -> Result<Option<TenantId>> {
        // Records are JSON bytes (0001_init.sql); `json`, unlike `jsonb`, reads one whose
        // other strings hold \u0000.
        let (query, value) = match lookup {
            TenantLookup::Tenant(id) => ("SELECT id FROM tenants WHERE id = $1", id),
            TenantLookup::OAuthState(hash) => (
                "SELECT tenant_id FROM oauth_states WHERE state_hash = $1",
                hash,
            ),
            TenantLookup::Reveal(hash) => {
                ("SELECT tenant_id FROM reveals WHERE token_hash = $1", hash)
            }
            TenantLookup::Session(hash) => {
                ("SELECT tenant_id FROM sessions WHERE id_hash = $1", hash)
            }
            TenantLookup::MailAddress(hash) => (
                "SELECT tenant_id FROM email_addresses WHERE local_hash = $1",
                hash,
            ),
            TenantLookup::Email(email) => (
                "SELECT id FROM tenants \
                 WHERE lower(convert_from(record, 'UTF8')::json->>'email') = lower($1) \
                 ORDER BY id LIMIT 1",
                email,
            ),
            TenantLookup::StripeCustomer(customer) => (
                "SELECT tenant_id FROM tenant_settings \
                 WHERE convert_from(record, 'UTF8')::json->'billing'->>'customer_id' = $1 \
                 ORDER BY tenant_id LIMIT 1",
                customer,
            ),
        };
        self.block(async {
            let client = self.client().await?;
            let row = client.query_opt(query, &[value]).await.map_err(pg)?;
            Ok(row.map(|row| TenantId::from_stored(row.get::<_, String>(0))))
        })
    }

    /// Removes the rows of nodes silent for longer than `silence` (crashed processes).
    pub fn forget_silent_nodes(&self, silence: Duration) -> Result<usize> {
        self.execute(
            "DELETE FROM nodes WHERE heartbeat_at < now() - $1 * interval '1 millisecond'",
            &[&millis(silence)],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_claimed_while_a_heartbeat_runs_is_kept() {
        let fence = Fence::new("a");
        fence.hold("tenant:old", 1);
        fence.hold("tenant:moved", 3);
        let asked = fence.held.read().unwrap().clone();
        // Claimed after the heartbeat read what to renew: not renewed this time, not lost.
        fence.hold("tenant:new", 1);
        let renewed = HashMap::from([("tenant:old".to_owned(), 1), ("tenant:moved".to_owned(), 4)]);
        assert_eq!(
            fence.keep(&asked, &renewed),
            vec!["tenant:moved".to_owned()]
        );
        assert_eq!(fence.epoch("tenant:new"), Some(1));
        assert_eq!(fence.epoch("tenant:old"), Some(1));
        assert_eq!(fence.epoch("tenant:moved"), None);
    }
}
