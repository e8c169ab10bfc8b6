//! Image captions by a vision-capable OpenAI-compatible chat model (OpenAI, OpenRouter, a
//! local llama.cpp or vLLM server with a vision model), when one is configured: the image
//! is sent inline as a `data:` URL in a `chat/completions` request, and the answer is the
//! caption. The caption goes before the image's OCR text, so a search for what the image
//! shows finds it. Without a model, images get OCR text and dimensions only.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

/// What the model is asked.
const PROMPT: &str = "Describe this image for a search index in two to four plain \
    sentences: what it shows, the kind of image (photo, screenshot, chart, diagram, \
    scanned page), and any names, numbers or visible text that matter. No preamble.";

/// Longest caption kept, in characters.
const CAPTION_MAX_CHARS: usize = 2_000;

/// Where to send images.
#[derive(Clone)]
pub struct VisionEndpoint {
    /// The API base; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for VisionEndpoint {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("VisionEndpoint")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl VisionEndpoint {
    /// The caption of the image, or why there is none.
    pub async fn caption(&self, bytes: &[u8], mime: &str) -> Result<String, String> {
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        let data_url = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        let body = json!({
            "model": self.model,
            "max_tokens": 300,
            "temperature": 0,
            "messages": [{
                "role": "user",
                "content": [
                    {"type": "text", "text": PROMPT},
                    {"type": "image_url", "image_url": {"url": data_url}},
                ],
            }],
        });
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut request = client.post(&url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|error| format!("the vision model did not answer: {error}"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            let excerpt: String = text.chars().take(200).collect();
            return Err(format!("the vision model answered {status}: {excerpt}"));
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|error| format!("the vision model's answer is not JSON: {error}"))?;
        caption_of(&answer)
    }
}

/// The caption in a chat-completions answer: the first choice's content, as a string or
/// as text parts.
fn caption_of(answer: &Value) -> Result<String, String> {
    let content = answer
        .pointer("/choices/0/message/content")
        .ok_or("the vision model's answer has no choices[0].message.content")?;
    let text = match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    let text: String = text.trim().chars().take(CAPTION_MAX_CHARS).collect();
    if text.is_empty() {
        return Err("the vision model answered an empty caption".to_owned());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caption_is_the_first_choice_as_text_or_parts() {
        let plain = json!({"choices": [{"message": {"content": "  A red kite.  "}}]});
        assert_eq!(caption_of(&plain).unwrap(), "A red kite.");
        let parts = json!({"choices": [{"message": {"content": [
            {"type": "text", "text": "A chart"}, {"type": "text", "text": "of sales."}
        ]}}]});
        assert_eq!(caption_of(&parts).unwrap(), "A chart of sales.");
        for bad in [
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{"message": {"content": "   "}}]}),
            json!({"choices": [{"message": {"content": 7}}]}),
        ] {
            assert!(caption_of(&bad).is_err(), "{bad}");
        }
        let long = json!({"choices": [{"message": {"content": "x".repeat(5_000)}}]});
        assert_eq!(caption_of(&long).unwrap().len(), CAPTION_MAX_CHARS);
    }
}
