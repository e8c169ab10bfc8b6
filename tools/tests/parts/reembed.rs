use memvault_server::api::operator::{
    EmbeddingModelResponse, EmbeddingsResponse, ModelCollectionsResponse, ReembeddingResponse,
};
use memvault_tools::reembed::*;

fn state(left: usize, failing: usize) -> EmbeddingsResponse {
    EmbeddingsResponse {
        configured: EmbeddingModelResponse {
            model: "text-embedding-3-small".to_owned(),
            dimensions: 1536,
        },
        models: vec![ModelCollectionsResponse {
            model: "all-MiniLM-L6-v2".to_owned(),
            dimensions: 384,
            collections: left,
        }],
        reembedding: ReembeddingResponse {
            collections_left: left,
            memories_done: 40,
            memories_total: 100,
            collections_done: 1,
            memories_switched: 50,
            failing,
            last_error: (failing > 0).then(|| "the endpoint answered 429".to_owned()),
        },
    }
}

#[test]
fn progress_counts_the_switched_collections_too() {
    let state = state(2, 0);
    assert_eq!(done(&state), 90);
    assert_eq!(total(&state), 150);
    let text = describe(&state);
    assert!(
        text.contains("text-embedding-3-small (1536 dimensions)"),
        "{text}"
    );
    assert!(
        text.contains("2 collections left, 90 of 150 memories"),
        "{text}"
    );
}

#[test]
fn a_failing_reembedding_says_why() {
    assert!(message(&state(1, 1)).contains("1 retrying: the endpoint answered 429"));
    assert_eq!(
        describe(&state(0, 0)).lines().last(),
        Some("every collection is on the configured model")
    );
}
