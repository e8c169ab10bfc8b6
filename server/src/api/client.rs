//! Who the client is: the TCP peer's address, or, when the peer is a proxy the operator
//! listed as trusted (`server.trusted_proxies`), the address that proxy names in
//! `X-Forwarded-For`.
//!
//! `X-Forwarded-For` is read from the right: each trusted proxy appended the address it
//! received the request from, so the first address from the right that is not a trusted
//! proxy is the client. Everything to its left was written by the client itself and is
//! never believed. A peer that is not trusted is the client, whatever headers it sends.
//! The per-address limits (signup, key recovery) and the audit log use this address.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};

/// Proxies whose `X-Forwarded-For` is believed: addresses and CIDR blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    blocks: Vec<Block>,
}

/// An address block: `address/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    address: IpAddr,
    prefix: u8,
}

impl Block {
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address
            .parse()
            .map_err(|_| format!("'{text}' is not an IP address or CIDR block"))?;
        let longest = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => longest,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= longest)
                .ok_or_else(|| format!("'{text}': the prefix must be 0 to {longest}"))?,
        };
        Ok(Self { address, prefix })
    }

    fn contains(&self, address: IpAddr) -> bool {
        match (self.address, canonical(address)) {
            (IpAddr::V4(block), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(block) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(block), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(block) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`, what a dual-stack socket reports)
/// as the IPv4 address it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

impl TrustedProxies {
    /// Parses `server.trusted_proxies`: each an IP address or a CIDR block.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, String> {
        let blocks = entries
            .iter()
            .map(|entry| Block::parse(entry.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self { blocks })
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.blocks.iter().any(|block| block.contains(address))
    }

    /// The client behind a request from `peer` carrying `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        // Every X-Forwarded-For header, in order, read as one list from the right.
        let forwarded: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        for hop in forwarded.iter().rev() {
            match hop.trim().parse::<IpAddr>() {
                Ok(address) => {
                    client = canonical(address);
                    if !self.trusts(client) {
                        break;
                    }
                }
                // Not an address: written by whoever the last trusted hop heard from,
                // which is as far as the chain can be believed.
                Err(_) => break,
            }
        }
        client
    }
}

/// The client's address (see the module docs), or `unknown` when the server was not
/// started with connection info (in-process tests).
pub struct ClientAddress(pub String);

impl ClientAddress {
    /// The client of a request with these extensions and headers: see the module docs.
    pub fn of(extensions: &Extensions, headers: &HeaderMap, trusted: &TrustedProxies) -> Self {
        Self(
            extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| trusted.client(peer.ip(), headers).to_string())
                .unwrap_or_else(|| "unknown".to_owned()),
        )
    }
}

impl<S> FromRequestParts<S> for ClientAddress
where
    S: Send + Sync,
    Arc<TrustedProxies>: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let trusted = Arc::<TrustedProxies>::from_ref(state);
        Ok(Self::of(&parts.extensions, &parts.headers, &trusted))
    }
}
