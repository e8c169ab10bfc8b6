//! The dashboard's static files, compiled into the binary (see `assets/README.md` for
//! where each comes from and how it is pinned).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The vendored htmx, under its versioned name (so a new version is a new URL).
pub const HTMX: &str = "htmx-2.0.11.min.js";
const HTMX_BYTES: &[u8] = include_bytes!("assets/htmx-2.0.11.min.js");
const STYLE: &[u8] = include_bytes!("assets/style.css");
const SCRIPT: &[u8] = include_bytes!("assets/dashboard.js");

/// A file's bytes and content type, by its name under `/dashboard/assets/`.
pub fn asset(name: &str) -> Option<(&'static [u8], &'static str)> {
    Some(match name {
        HTMX => (HTMX_BYTES, "text/javascript; charset=utf-8"),
        "style.css" => (STYLE, "text/css; charset=utf-8"),
        "dashboard.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => return None,
    })
}

/// `GET /dashboard/assets/{file}`: one of the three files, or 404.
pub async fn serve(Path(file): Path<String>) -> Response {
    let Some((bytes, content_type)) = asset(&file) else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "public, max-age=3600"),
        ],
        bytes,
    )
        .into_response()
}
