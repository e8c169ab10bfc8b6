//! The page shell (navigation, the signed-in key, sign-out), and the pieces pages share:
//! notices, badges, times, empty states and inline SVG charts.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};
use serde_json::Value;

use super::assets::HTMX;
use super::client::Failure;
use super::session::{Viewer, CSRF_FIELD};
use crate::error::ApiError;

/// The navigation's entries: (section, link relative to `/dashboard/`, label).
const TENANT_NAV: [(&str, &str, &str); 9] = [
    ("overview", "./", "Overview"),
    ("collections", "collections", "Collections"),
    ("files", "files", "Files & ingest"),
    ("connectors", "connectors", "Connectors & mail"),
    ("keys", "keys", "Keys & agents"),
    ("webhook", "webhook", "Webhook"),
    ("audit", "audit", "Audit log"),
    ("usage", "usage", "Usage & spend"),
    ("account", "account", "Account"),
];
const OPERATOR_NAV: [(&str, &str, &str); 5] = [
    ("op-metrics", "operator/metrics", "Metrics"),
    ("op-tenants", "operator/tenants", "Tenants"),
    ("op-health", "operator/health", "Memory health"),
    ("op-analytics", "operator/analytics", "Analytics"),
    ("op-status", "operator/status", "Status"),
];

/// The `<head>`: base, stylesheet, scripts (deferred, same origin), htmx configured for a
/// strict CSP (no inline indicator styles, no eval).
fn head(base: &str, title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            base href=(base);
            title { (title) " · memvault" }
            meta name="htmx-config" content=r#"{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":false}]}"#;
            link rel="stylesheet" href="assets/style.css";
            script src=(format!("assets/{HTMX}")) defer {}
            script src="assets/dashboard.js" defer {}
        }
    }
}

/// A whole page for a signed-in viewer, 200.
pub fn page(viewer: &Viewer, section: &str, title: &str, content: Markup) -> Response {
    page_with_status(viewer, StatusCode::OK, section, title, content)
}

pub fn page_with_status(
    viewer: &Viewer,
    status: StatusCode,
    section: &str,
    title: &str,
    content: Markup,
) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(&viewer.base, title))
            body hx-boost="true" {
                div.shell {
                    nav.side aria-label="Dashboard" {
                        a.brand href="./" { "memvault" }
                        @for (key, href, label) in TENANT_NAV {
                            @if key == section {
                                a href=(href) aria-current="page" { (label) }
                            } @else {
                                a href=(href) { (label) }
                            }
                        }
                        @if viewer.is_operator() {
                            div.group { "Operator" }
                            @for (key, href, label) in OPERATOR_NAV {
                                @if key == section {
                                    a href=(href) aria-current="page" { (label) }
                                } @else {
                                    a href=(href) { (label) }
                                }
                            }
                        }
                        div.who {
                            "Signed in as " strong { (viewer.agent.label) }
                            @if viewer.agent.read_only { " (read-only)" }
                            @else if !viewer.agent.owner { " (agent key)" }
                        }
                        form method="post" action="logout" hx-boost="false" {
                            (csrf(viewer))
                            button.link type="submit" { "Sign out" }
                        }
                    }
                    main id="main" {
                        h1 { (title) }
                        (content)
                    }
                }
            }
        }
    };
    (status, Html(markup.into_string())).into_response()
}

/// A page outside a session (sign-in).
pub fn bare(status: StatusCode, base: &str, title: &str, content: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(base, title))
            body {
                main.login { (content) }
            }
        }
    };
    (status, Html(markup.into_string())).into_response()
}

/// The hidden CSRF field every change form carries.
pub fn csrf(viewer: &Viewer) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(viewer.csrf); }
}

/// A refusal before anything ran (cross-origin, stale token, no permission), with the
/// code of the API's table.
pub fn refused(viewer: &Viewer, error: ApiError) -> Response {
    let failure = Failure::from(error);
    page_with_status(
        viewer,
        failure.status,
        "",
        "Not allowed",
        html! {
            (error_notice(&failure.detail, &failure.code))
            p { a href="./" { "Back to the overview" } }
        },
    )
}

/// An API error shown as a page, with the API's own status, detail and code.
pub fn failed(viewer: &Viewer, failure: &Failure, back: &str) -> Response {
    page_with_status(
        viewer,
        failure.status,
        "",
        "That did not work",
        html! {
            (error_notice(&failure.detail, &failure.code))
            p { a href=(back) { "Go back" } }
        },
    )
}

pub fn error_notice(detail: &str, code: &str) -> Markup {
    html! {
        div.notice.error role="alert" {
            strong { (detail) }
            " " span.muted.small { "(" (code) ")" }
        }
    }
}

/// A notice after a change that went through.
pub fn done_notice(message: Option<&str>) -> Markup {
    html! {
        @if let Some(message) = message {
            div.notice.ok role="status" { (message) }
        }
    }
}

/// Owner-only pages refuse agent keys with the API's own words.
pub fn owner_only(viewer: &Viewer) -> Option<Response> {
    (!viewer.is_owner()).then(|| refused(viewer, ApiError::OwnerKeyRequired))
}

/// Operator pages refuse every tenant but an admin-flagged one's owner.
pub fn operator_only(viewer: &Viewer) -> Option<Response> {
    (!viewer.is_operator()).then(|| refused(viewer, ApiError::AdminKeyRequired))
}

pub fn badge(kind: &str, text: &str) -> Markup {
    html! { span class=(format!("badge {kind}")) { (text) } }
}

/// A timestamp from the API (RFC 3339) as `2026-11-28 14:03 UTC`, in a `<time>`.
pub fn when(value: &Value) -> Markup {
    match value.as_str() {
        Some(stamp) => {
            let shown = chrono::DateTime::parse_from_rfc3339(stamp)
                .map(|at| {
                    at.with_timezone(&chrono::Utc)
                        .format("%Y-%m-%d %H:%M UTC")
                        .to_string()
                })
                .unwrap_or_else(|_| stamp.to_owned());
            html! { time datetime=(stamp) { (shown) } }
        }
        None => html! { span.muted { "—" } },
    }
}

/// A string field, or "".
pub fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or("")
}

/// The items of an array field (none when absent).
pub fn items<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value[field].as_array().map(Vec::as_slice).unwrap_or(&[])
}

pub fn number(value: &Value) -> String {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", n as i64),
        Some(n) => format!("{n:.2}"),
        None => "—".to_owned(),
    }
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// An empty state: what is missing and what to do next.
pub fn empty(message: &str, next: Markup) -> Markup {
    html! { div.empty { p { (message) } (next) } }
}

/// A bar chart of labelled values as inline SVG (no script, no library).
pub fn bar_chart(title: &str, points: &[(String, f64)], unit: &str) -> Markup {
    let width = 640.0;
    let height = 160.0;
    let top = 12.0;
    let bottom = 22.0;
    let max = points
        .iter()
        .map(|(_, v)| *v)
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let slot = width / points.len().max(1) as f64;
    let bar = (slot * 0.7).max(1.0);
    let label_every = (points.len() / 8).max(1);
    html! {
        figure {
            svg.chart viewBox=(format!("0 0 {width} {height}")) role="img" aria-label=(title) {
                title { (title) }
                line.axis x1="0" y1=(height - bottom) x2=(width) y2=(height - bottom) {}
                @for (i, (label, value)) in points.iter().enumerate() {
                    @let h = (value / max) * (height - top - bottom);
                    @let x = i as f64 * slot + (slot - bar) / 2.0;
                    rect.bar x=(format!("{x:.1}")) y=(format!("{:.1}", height - bottom - h))
                        width=(format!("{bar:.1}")) height=(format!("{h:.1}")) {
                        title { (label) ": " (format_value(*value)) " " (unit) }
                    }
                    @if i % label_every == 0 {
                        text x=(format!("{:.1}", x)) y=(height - 6.0) { (label) }
                    }
                }
                text x="4" y="10" { "max " (format_value(max)) " " (unit) }
            }
        }
    }
}

fn format_value(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value}")
    } else if value < 1.0 {
        format!("{value:.4}")
    } else {
        format!("{value:.2}")
    }
}
