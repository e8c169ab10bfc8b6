use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderValue};
use memvault_server::api::client::TrustedProxies;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn forwarded(values: &[&str]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for value in values {
        headers.append("x-forwarded-for", HeaderValue::from_str(value).unwrap());
    }
    headers
}

#[test]
fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
    let none = TrustedProxies::default();
    let headers = forwarded(&["198.51.100.9"]);
    assert_eq!(none.client(ip("203.0.113.5"), &headers), ip("203.0.113.5"));
    let other = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
    assert_eq!(other.client(ip("203.0.113.5"), &headers), ip("203.0.113.5"));
}

#[test]
fn behind_trusted_proxies_the_first_untrusted_hop_from_the_right_is_the_client() {
    let trusted = TrustedProxies::parse(&["127.0.0.1", "10.0.0.0/8", "fd00::/8"]).unwrap();
    // One proxy: what it appended.
    let one = forwarded(&["198.51.100.9"]);
    assert_eq!(trusted.client(ip("127.0.0.1"), &one), ip("198.51.100.9"));
    // The client wrote an address of its own in front; the proxies' hops are skipped.
    let chain = forwarded(&["1.2.3.4, 198.51.100.9", "10.1.2.3"]);
    assert_eq!(trusted.client(ip("10.9.9.9"), &chain), ip("198.51.100.9"));
    // Every hop trusted: the leftmost.
    let inside = forwarded(&["10.0.0.7, 10.0.0.8"]);
    assert_eq!(trusted.client(ip("127.0.0.1"), &inside), ip("10.0.0.7"));
    // No header: the proxy itself.
    assert_eq!(
        trusted.client(ip("127.0.0.1"), &HeaderMap::new()),
        ip("127.0.0.1")
    );
    // Garbage ends the chain at the last address that can be believed.
    let garbage = forwarded(&["not-an-address, 10.0.0.8"]);
    assert_eq!(trusted.client(ip("127.0.0.1"), &garbage), ip("10.0.0.8"));
    // IPv6, and IPv4 seen through a dual-stack socket.
    let six = forwarded(&["2001:db8::1"]);
    assert_eq!(trusted.client(ip("fd00::1"), &six), ip("2001:db8::1"));
    assert_eq!(
        trusted.client(ip("::ffff:127.0.0.1"), &one),
        ip("198.51.100.9")
    );
}

#[test]
fn entries_are_addresses_or_cidr_blocks() {
    assert!(TrustedProxies::parse(&["192.168.0.0/16", "::1", "2001:db8::/32"]).is_ok());
    for bad in ["localhost", "10.0.0.0/33", "::1/129", "10.0.0.0/x", ""] {
        assert!(TrustedProxies::parse(&[bad]).is_err(), "{bad}");
    }
    let everything = TrustedProxies::parse(&["0.0.0.0/0"]).unwrap();
    assert_eq!(
        everything.client(ip("203.0.113.5"), &forwarded(&["198.51.100.9"])),
        ip("198.51.100.9")
    );
}
