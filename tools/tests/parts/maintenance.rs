use memvault_tools::bench::maintenance::*;

#[test]
fn seeded_vectors_are_deterministic_unit_vectors() {
    let a = seeded_unit_vector("a text");
    assert_eq!(a.len(), DIMENSIONS);
    assert_eq!(a, seeded_unit_vector("a text"));
    let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4);
    let b = seeded_unit_vector("another text");
    let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!(cosine.abs() < 0.5);
}

#[test]
fn one_text_in_twenty_repeats_one_in_its_batch() {
    assert_eq!(memory_text(None, 19), memory_text(None, 9));
    assert_ne!(memory_text(None, 18), memory_text(None, 8));
    let distinct: std::collections::HashSet<String> =
        (0..1000).map(|index| memory_text(None, index)).collect();
    assert_eq!(distinct.len(), 950);
}
