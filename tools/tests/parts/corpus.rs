use memvault_tools::bench::corpus::*;

#[test]
fn passages_split_into_sentences() {
    assert_eq!(
        sentences("Dr. Who is here. He stays a while! Ok? Then he leaves"),
        vec!["Dr. Who is here. He stays a while!", "Ok? Then he leaves"]
    );
    assert!(sentences("   ").is_empty());
}
