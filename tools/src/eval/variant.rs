//! The ways of searching the table scores: the three modes, hybrid at the API's default
//! `min_score`, and the fusion grid behind `--grid`.

use memvault_index::search::{FusionParams, SearchMode};

/// One way of searching: a mode, a vector threshold and hybrid's fusion settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub label: String,
    pub mode: SearchMode,
    pub min_score: f32,
    pub fusion: FusionParams,
}

/// The API's default `min_score`.
const API_MIN_SCORE: f32 = 0.3;

impl Variant {
    fn new(label: impl Into<String>, mode: SearchMode, min_score: f32) -> Self {
        Self {
            label: label.into(),
            mode,
            min_score,
            fusion: FusionParams::default(),
        }
    }
}

/// The modes at `min_score` 0 (every mode ranks the whole collection), and hybrid at the
/// API's default threshold.
pub fn modes() -> Vec<Variant> {
    vec![
        Variant::new("vector", SearchMode::Vector, 0.0),
        Variant::new("text", SearchMode::Text, 0.0),
        Variant::new("hybrid", SearchMode::Hybrid, 0.0),
        Variant::new(
            format!("hybrid, min_score {API_MIN_SCORE} (API default)"),
            SearchMode::Hybrid,
            API_MIN_SCORE,
        ),
    ]
}

/// Hybrid fusion settings around the default (how it was chosen): the vector weight α
/// against the candidate window each list gives.
pub fn grid() -> Vec<Variant> {
    let mut settings = Vec::new();
    for window in [10, 20, 50] {
        for vector_weight in [0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8] {
            settings.push(FusionParams {
                window,
                vector_weight,
            });
        }
    }
    settings
        .into_iter()
        .map(|fusion| Variant {
            label: format!("alpha {}, window {}", fusion.vector_weight, fusion.window),
            mode: SearchMode::Hybrid,
            min_score: 0.0,
            fusion,
        })
        .collect()
}
