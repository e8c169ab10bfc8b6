//! Speech to text by an OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI,
//! Groq, a local faster-whisper or whisper.cpp server), when one is configured: the audio
//! file is sent as it is (multipart `file` and `model`), and the answer's `text` is the
//! transcript. Without one, audio is transcribed offline in the worker (Moonshine).

use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;

/// Where to send audio.
#[derive(Clone)]
pub struct TranscriptionEndpoint {
    /// The API base; `/audio/transcriptions` is appended.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for TranscriptionEndpoint {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TranscriptionEndpoint")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Deserialize)]
struct Answer {
    text: String,
}

impl TranscriptionEndpoint {
    /// The transcript of the audio file, or why there is none.
    pub async fn transcribe(
        &self,
        bytes: Bytes,
        filename: &str,
        mime: &str,
    ) -> Result<String, String> {
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        let part = reqwest::multipart::Part::stream(bytes)
            .file_name(filename.to_owned())
            .mime_str(mime)
            .map_err(|error| format!("invalid content type: {error}"))?;
        let form = reqwest::multipart::Form::new()
            .text("model", self.model.clone())
            .text("response_format", "json")
            .part("file", part);
        let url = format!(
            "{}/audio/transcriptions",
            self.base_url.trim_end_matches('/')
        );
        let mut request = client.post(&url).multipart(form);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|error| format!("the transcription endpoint did not answer: {error}"))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let excerpt: String = body.chars().take(200).collect();
            return Err(format!(
                "the transcription endpoint answered {status}: {excerpt}"
            ));
        }
        let answer: Answer = response.json().await.map_err(|error| {
            format!("the transcription endpoint's answer is not JSON with `text`: {error}")
        })?;
        Ok(answer.text.trim().to_owned())
    }
}
