//! Several nodes: which tenants this node serves, [`TenantOwnership`] (the seam lives in
//! memvault-storage, next to the routing of tenants' data).

pub use memvault_storage::TenantOwnership;
