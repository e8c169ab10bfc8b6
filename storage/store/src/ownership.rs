//! Several nodes (the server's cluster mode): the seam through which the service learns
//! which tenants this node serves and claims a tenant before it creates or loads one.
//! The server fills it with its leases on the shared Postgres; one node alone has none
//! and serves every tenant.

use crate::error::StorageError;
use crate::records::TenantId;

/// Which tenants this node serves. A node serves a tenant while it holds the tenant's
/// lease: it runs the tenant's actors, answers its requests (other nodes forward them
/// here) and runs its jobs; its writes of the tenant's data are fenced by the lease.
pub trait TenantOwnership: std::fmt::Debug + Send + Sync + 'static {
    /// Claims `tenant` for this node (a tenant being created here, or one this node is
    /// about to load): `Ok(true)` when this node holds it now, `Ok(false)` when another
    /// node does. Blocking (a database round trip).
    fn claim(&self, tenant: &TenantId) -> Result<bool, StorageError>;

    /// Whether this node holds `tenant`'s lease now (as last claimed or renewed).
    fn holds(&self, tenant: &TenantId) -> bool;

    /// A tenant just created here, whose key nobody has seen yet (so no request for it
    /// can be under way): when another node should serve it, releases its lease and
    /// answers true; its first request then goes there. Blocking.
    fn hand_off(&self, tenant: &TenantId) -> Result<bool, StorageError>;
}
