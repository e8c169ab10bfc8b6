//! Linear: one GraphQL query over `issues`, ordered by `updatedAt`, newest first, filtered
//! by `updatedAt >= since`, archived issues included so that archiving reaches the memory.
//! A personal API key goes in `Authorization` without "Bearer" (an OAuth token with it).
//! Errors come as HTTP 400 with `errors[].extensions.code` (`RATELIMITED`,
//! `AUTHENTICATION_ERROR`), server failures as 5xx.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::http::Answer;
use crate::provider::{
    Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind, Record,
    Window,
};
use crate::providers::{parse_time, text_of};

/// Issues per page (Linear's maximum `first` is 250).
const PAGE: u32 = 100;

const CHANGES: &str = "query MemvaultIssues($first: Int!, $after: String, $filter: IssueFilter) {
  issues(first: $first, after: $after, orderBy: updatedAt, filter: $filter, includeArchived: true) {
    nodes { id identifier title description url updatedAt archivedAt creator { name } }
    pageInfo { hasNextPage endCursor }
  }
}";

const IDS: &str = "query MemvaultIssueIds($first: Int!, $after: String) {
  issues(first: $first, after: $after, orderBy: updatedAt) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
}";

pub struct Linear;

#[async_trait]
impl Provider for Linear {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Linear
    }

    fn overlap(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn validate(&self, _config: &Value, credentials: &Credentials) -> Result<(), String> {
        credentials.require("token")
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let filter = window
            .since
            .map(|since| json!({"updatedAt": {"gte": since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}}));
        let data = query(
            cx,
            CHANGES,
            json!({"first": PAGE, "after": page, "filter": filter}),
        )
        .await?;
        let issues = &data["issues"];
        let mut changes = Vec::new();
        for node in issues["nodes"].as_array().into_iter().flatten() {
            let Some(id) = node["id"].as_str() else {
                continue;
            };
            if !node["archivedAt"].is_null() {
                changes.push(Change::Delete(id.to_owned()));
                continue;
            }
            let modified = parse_time(&node["updatedAt"])
                .ok_or_else(|| ProviderError::Transient(format!("issue {id} has no updatedAt")))?;
            let title = match (text_of(&node["identifier"]), text_of(&node["title"])) {
                (Some(identifier), Some(title)) => format!("{identifier}: {title}"),
                (identifier, title) => title.or(identifier).unwrap_or_default(),
            };
            changes.push(Change::Upsert(Record {
                id: id.to_owned(),
                modified,
                title,
                text: text_of(&node["description"]).unwrap_or_default(),
                url: text_of(&node["url"]),
                author: text_of(&node["creator"]["name"]),
            }));
        }
        Ok(Page {
            changes,
            next: next_page(issues),
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let data = query(cx, IDS, json!({"first": 250, "after": page})).await?;
        let issues = &data["issues"];
        Ok(IdPage {
            ids: issues["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|node| node["id"].as_str().map(str::to_owned))
                .collect(),
            next: next_page(issues),
        })
    }
}

fn next_page(connection: &Value) -> Option<String> {
    let info = &connection["pageInfo"];
    if info["hasNextPage"].as_bool() == Some(true) {
        info["endCursor"].as_str().map(str::to_owned)
    } else {
        None
    }
}

async fn query(cx: &Context<'_>, document: &str, variables: Value) -> Result<Value, ProviderError> {
    let token = cx
        .credentials
        .token()
        .ok_or_else(|| ProviderError::Unauthorized("the connection has no token".to_owned()))?;
    // Personal API keys go bare; OAuth access tokens as a bearer.
    let authorization = if token.starts_with("lin_api_") {
        token.to_owned()
    } else {
        format!("Bearer {token}")
    };
    let url = format!("{}/graphql", cx.base_url);
    let body = json!({"query": document, "variables": variables});
    cx.http
        .call(
            ProviderKind::Linear,
            &cx.pace_key(ProviderKind::Linear),
            |client| {
                client
                    .post(&url)
                    .header(reqwest::header::AUTHORIZATION, &authorization)
                    .json(&body)
            },
            judge,
        )
        .await
}

fn judge(answer: Answer) -> Result<Value, ProviderError> {
    let status = answer.status.as_u16();
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if let Some(error) = body["errors"].as_array().and_then(|errors| errors.first()) {
        let message = error["message"].as_str().unwrap_or("an error").to_owned();
        return Err(match error["extensions"]["code"].as_str() {
            Some("RATELIMITED") => ProviderError::RateLimited {
                retry_after: answer.retry_after(),
            },
            Some("AUTHENTICATION_ERROR" | "FORBIDDEN") => ProviderError::Unauthorized(message),
            _ if status >= 500 => ProviderError::Transient(format!("HTTP {status}: {message}")),
            _ => ProviderError::Invalid(format!("HTTP {status}: {message}")),
        });
    }
    match status {
        200 => body
            .get("data")
            .filter(|data| data.is_object())
            .cloned()
            .ok_or_else(|| ProviderError::Transient("Linear answered without data".to_owned())),
        401 => Err(ProviderError::Unauthorized("HTTP 401".to_owned())),
        429 => Err(ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        }),
        500..=599 => Err(ProviderError::Transient(format!("HTTP {status}"))),
        _ => Err(ProviderError::Invalid(format!("HTTP {status}"))),
    }
}
