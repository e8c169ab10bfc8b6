//! The SSRF guard: a webhook URL must not reach the service's own machine, its private
//! network or a cloud metadata endpoint.
//!
//! Checked three times, because a hostname can change what it resolves to between the
//! check and the connection (DNS rebinding) and a receiver can redirect:
//!
//! 1. when the URL is configured ([`parse_target`] + [`check_target`], which resolves the
//!    host and refuses it when any address is forbidden, or when it resolves to nothing);
//! 2. at every delivery, for an IP-literal host ([`check_host_literal`]), since reqwest
//!    connects to a literal without resolving it;
//! 3. at connect time, for every hostname of every hop, by [`GuardedResolver`], which
//!    drops forbidden addresses (and fails when none remain), and on redirects by
//!    [`redirect_policy`], which refuses forbidden IP literals and follows at most
//!    [`MAX_REDIRECTS`].
//!
//! With `allow_private` (config `webhooks.allow_private_targets`, for tests and trusted
//! networks) none of this applies; redirects are still limited.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;
use reqwest::Url;
use url::Host;

/// Longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;
/// Redirects followed per delivery; the next one fails the attempt.
pub const MAX_REDIRECTS: usize = 3;
/// How long resolving a webhook host may take at configuration time.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a webhook may not connect to `ip`: loopback, unspecified, private (10/8,
/// 172.16/12, 192.168/16), shared CGNAT (100.64/10), link-local (169.254/16, which holds
/// the cloud metadata endpoint 169.254.169.254), "this network" (0/8), IETF protocol
/// assignments (192.0.0/24), benchmarking (198.18/15), documentation ranges, multicast,
/// reserved (240/4) and broadcast; for IPv6 `::1`, `::`, unique local (fc00::/7),
/// link-local (fe80::/10), deprecated site-local (fec0::/10), documentation
/// (2001:db8::/32) and multicast, and every form that embeds an IPv4 address (mapped
/// `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is
/// judged as that IPv4 address.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_forbidden_v4(ip),
        IpAddr::V6(ip) => is_forbidden_v6(ip),
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let [first, second, third, _] = ip.octets();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || first == 0
        || (first == 100 && (second & 0xc0) == 64)
        || (first == 192 && second == 0 && third == 0)
        || (first == 198 && (second & 0xfe) == 18)
        || first >= 240
}

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(embedded) = embedded_ipv4(ip) {
        return is_forbidden_v4(embedded);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
}

/// The IPv4 address an IPv6 address stands for, when it is one of the forms that reach
/// an IPv4 host: mapped, compatible (but not `::` and `::1`), NAT64 or 6to4.
fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Some(mapped);
    }
    let segments = ip.segments();
    let low = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if segments[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(low(segments[6], segments[7]));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low(segments[6], segments[7]));
    }
    if segments[0] == 0x2002 {
        return Some(low(segments[1], segments[2]));
    }
    None
}

/// A webhook URL as configured: http or https, with a host, without credentials, at most
/// [`MAX_URL_LEN`] characters.
pub fn parse_target(raw: &str) -> Result<Url, String> {
    if raw.len() > MAX_URL_LEN {
        return Err(format!("url must be at most {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(raw.trim()).map_err(|error| format!("url is not a valid URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "url must be an http or https URL, not '{}:'",
            url.scheme()
        ));
    }
    match url.host() {
        None => return Err("url must have a host".to_owned()),
        Some(Host::Domain("")) => return Err("url must have a host".to_owned()),
        Some(_) => {}
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("url must not contain credentials (user:password@)".to_owned());
    }
    Ok(url)
}

/// Refuses a URL whose host is a forbidden IP literal; a hostname passes (it is checked
/// when resolved).
pub fn check_host_literal(url: &Url) -> Result<(), String> {
    let ip = match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(Host::Domain(_)) | None => return Ok(()),
    };
    if is_forbidden(ip) {
        return Err(refusal(&ip.to_string(), ip));
    }
    Ok(())
}

/// Refuses a URL whose host is, or resolves to, a forbidden address, or resolves to
/// nothing. With `allow_private` every URL passes.
pub async fn check_target(url: &Url, allow_private: bool) -> Result<(), String> {
    if allow_private {
        return Ok(());
    }
    check_host_literal(url)?;
    let Some(Host::Domain(host)) = url.host() else {
        return Ok(());
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let lookup = tokio::net::lookup_host((host, port));
    let addresses: Vec<SocketAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
        Ok(Ok(addresses)) => addresses.collect(),
        Ok(Err(error)) => return Err(format!("url host '{host}' does not resolve: {error}")),
        Err(_) => return Err(format!("url host '{host}' did not resolve in time")),
    };
    if addresses.is_empty() {
        return Err(format!("url host '{host}' resolves to no address"));
    }
    match addresses.iter().find(|address| is_forbidden(address.ip())) {
        Some(address) => Err(refusal(host, address.ip())),
        None => Ok(()),
    }
}

/// A tenant's own Postgres (`database/config`), checked like a webhook target: a
/// `postgres://` or `postgresql://` URL with a host that resolves to no private address
/// (unless `allow_private`), and no `host=` or `hostaddr=` in its query (libpq lets the
/// query override the URL's host, which would get around the guard). The target to show,
/// `user@host:port/database` without the password, or why it is refused.
pub async fn check_database_target(url: &str, allow_private: bool) -> Result<String, String> {
    let refused = || "url must be a postgres:// or postgresql:// URL with a host".to_owned();
    let mut parsed = Url::parse(url).map_err(|_| refused())?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(refused());
    }
    let host = parsed
        .host_str()
        .filter(|host| !host.is_empty())
        .ok_or_else(refused)?;
    let user = match parsed.username() {
        "" => String::new(),
        user => format!("{user}@"),
    };
    let target = format!(
        "{user}{host}:{}/{}",
        parsed.port().unwrap_or(5432),
        parsed.path().trim_start_matches('/')
    );
    let names_a_host = parsed
        .query_pairs()
        .any(|(key, _)| matches!(key.as_ref(), "host" | "hostaddr"));
    // The guard resolves the host on the URL's port: Postgres's by default.
    if parsed.port().is_none() {
        let _ = parsed.set_port(Some(5432));
    }
    check_target(&parsed, allow_private)
        .await
        .map_err(|reason| format!("url: {reason}"))?;
    if !allow_private && names_a_host {
        return Err(
            "url: a host or hostaddr in the query (a unix socket or another address) \
                    is not allowed; put the host in the URL"
                .to_owned(),
        );
    }
    Ok(target)
}

fn refusal(host: &str, ip: IpAddr) -> String {
    if host == ip.to_string() {
        format!(
            "url host {ip} is a loopback, private, link-local or otherwise internal address; \
             only public addresses may be targeted"
        )
    } else {
        format!(
            "url host '{host}' resolves to {ip}, a loopback, private, link-local or otherwise \
             internal address; only public addresses may be targeted"
        )
    }
}

/// reqwest's resolver for webhook deliveries: resolves with the system resolver and
/// drops every forbidden address, so the guard holds at connect time for every hop
/// whatever the name resolved to when it was configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|address| !is_forbidden(address.ip()))
                .collect();
            if allowed.is_empty() {
                let reason = match resolved.first() {
                    Some(address) => refusal(&host, address.ip()),
                    None => format!("host '{host}' resolves to no address"),
                };
                return Err(reason.into());
            }
            let addresses: Addrs = Box::new(allowed.into_iter());
            Ok(addresses)
        })
    }
}

/// Whether a delivery may follow a redirect to `next` after `followed` earlier ones.
pub fn redirect_allowed(next: &Url, followed: usize, allow_private: bool) -> Result<(), String> {
    if followed >= MAX_REDIRECTS {
        return Err(format!(
            "more than {MAX_REDIRECTS} redirects; the delivery stops here"
        ));
    }
    if !matches!(next.scheme(), "http" | "https") {
        return Err(format!(
            "redirect to a non-http(s) URL ({}:)",
            next.scheme()
        ));
    }
    if allow_private {
        return Ok(());
    }
    check_host_literal(next).map_err(|reason| format!("redirect refused: {reason}"))
}

/// The redirect policy of the delivery client: [`redirect_allowed`] at every hop
/// (hostnames are checked by [`GuardedResolver`] when the hop connects).
pub fn redirect_policy(allow_private: bool) -> Policy {
    Policy::custom(move |attempt| {
        // `previous` holds every URL requested so far, the original one included.
        let followed = attempt.previous().len().saturating_sub(1);
        match redirect_allowed(attempt.url(), followed, allow_private) {
            Ok(()) => attempt.follow(),
            Err(reason) => attempt.error(reason),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(raw: &str) -> IpAddr {
        raw.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_forbidden() {
        for raw in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "fd00::1",
            "fc00::1",
            "fe80::1",
            "ff02::1",
        ] {
            assert!(is_forbidden(ip(raw)), "{raw} should be forbidden");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for raw in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_forbidden(ip(raw)), "{raw} should pass");
        }
    }

    #[test]
    fn parse_target_accepts_http_and_https_urls_with_a_host() {
        assert!(parse_target("https://hooks.example.com/memvault?x=1").is_ok());
        assert!(parse_target("http://127.0.0.1:8080/h").is_ok());
    }

    #[test]
    fn parse_target_refuses_other_schemes_missing_hosts_and_credentials() {
        for raw in [
            "ftp://example.com/hook",
            "file:///etc/passwd",
            "not a url",
            "http://",
            "http://:80/h",
            "mailto:someone@example.com",
            "https://user:secret@example.com/hook",
            "https://user@example.com/hook",
        ] {
            assert!(parse_target(raw).is_err(), "{raw} should be refused");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(parse_target(&long).is_err());
    }

    #[tokio::test]
    async fn a_database_target_is_a_postgres_url_on_an_allowed_host_shown_without_its_password() {
        assert_eq!(
            check_database_target("postgres://app:secret@127.0.0.1:6543/memories", true).await,
            Ok("app@127.0.0.1:6543/memories".to_owned())
        );
        assert_eq!(
            check_database_target("postgresql://127.0.0.1/db", true).await,
            Ok("127.0.0.1:5432/db".to_owned())
        );
        for refused in [
            "mysql://app@127.0.0.1/db",
            "postgres:///db",
            "not a url",
            "postgres://app:secret@127.0.0.1/db",
            "postgres://app@10.1.2.3/db",
            "postgres://app@127.0.0.1/db?host=/var/run/postgresql",
        ] {
            let answer = check_database_target(refused, false).await;
            assert!(answer.is_err(), "{refused}: {answer:?}");
            assert!(!answer.unwrap_err().contains("secret"));
        }
        // Allowed private targets may also name their host in the query.
        assert!(
            check_database_target("postgres://app@127.0.0.1/db?hostaddr=127.0.0.1", true)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn check_target_refuses_internal_literals() {
        for raw in [
            "http://127.0.0.1:1/h",
            "http://[::1]:1/h",
            "http://10.0.0.1/h",
            "http://169.254.169.254/latest/meta-data",
            "http://[::ffff:127.0.0.1]/h",
            "http://0x7f.1/h",
        ] {
            let url = parse_target(raw).unwrap();
            let refused = check_target(&url, false).await;
            assert!(refused.is_err(), "{raw} should be refused");
            assert!(check_target(&url, true).await.is_ok(), "{raw} allowed");
        }
    }

    #[tokio::test]
    async fn check_target_refuses_a_hostname_that_resolves_to_loopback() {
        let url = parse_target("http://localhost:9/hook").unwrap();
        let reason = check_target(&url, false).await.unwrap_err();
        assert!(reason.contains("localhost"), "{reason}");
        assert!(check_target(&url, true).await.is_ok());
    }

    #[tokio::test]
    async fn the_resolver_drops_forbidden_addresses() {
        let name: Name = "localhost".parse().unwrap();
        let outcome = GuardedResolver.resolve(name).await;
        assert!(outcome.is_err(), "localhost resolves only to loopback");
    }

    #[test]
    fn redirects_are_limited_and_checked() {
        let public = Url::parse("https://hooks.example.com/next").unwrap();
        let internal = Url::parse("http://169.254.169.254/latest/meta-data").unwrap();
        assert!(redirect_allowed(&public, 0, false).is_ok());
        assert!(redirect_allowed(&public, MAX_REDIRECTS - 1, false).is_ok());
        assert!(redirect_allowed(&public, MAX_REDIRECTS, false).is_err());
        assert!(redirect_allowed(&public, MAX_REDIRECTS, true).is_err());
        assert!(redirect_allowed(&internal, 0, false).is_err());
        assert!(redirect_allowed(&internal, 0, true).is_ok());
        let ftp = Url::parse("ftp://example.com/x").unwrap();
        assert!(redirect_allowed(&ftp, 0, true).is_err());
    }

    /// A receiver on 127.0.0.1 that redirects to another loopback literal: the policy of
    /// a guarded client refuses the hop; an unguarded one follows at most
    /// [`MAX_REDIRECTS`].
    #[tokio::test]
    async fn the_redirect_policy_is_applied_by_the_client() {
        use axum::extract::Path;
        use axum::response::{IntoResponse, Redirect};
        use axum::routing::get;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/hop/{left}",
            get(move |Path(left): Path<u32>| async move {
                if left == 0 {
                    "arrived".into_response()
                } else {
                    let next = format!("http://{address}/hop/{}", left - 1);
                    Redirect::temporary(&next).into_response()
                }
            }),
        );
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = |allow_private| {
            reqwest::Client::builder()
                .no_proxy()
                .redirect(redirect_policy(allow_private))
                .build()
                .unwrap()
        };
        let guarded = client(false)
            .get(format!("http://{address}/hop/1"))
            .send()
            .await;
        let error = guarded.expect_err("a redirect to a loopback literal must fail");
        assert!(error.is_redirect(), "{error:?}");
        let allowed = client(true)
            .get(format!("http://{address}/hop/{MAX_REDIRECTS}"))
            .send()
            .await
            .expect("three redirects are followed");
        assert_eq!(allowed.text().await.unwrap(), "arrived");
        let too_many = client(true)
            .get(format!("http://{address}/hop/{}", MAX_REDIRECTS + 1))
            .send()
            .await;
        assert!(too_many.expect_err("four redirects").is_redirect());
        server.abort();
    }
}
