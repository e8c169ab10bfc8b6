//! Extractive summary of a collection, without an LLM: k-means over the memories'
//! embeddings, the central memory of each cluster as a sentence, and a theme per cluster
//! from its top tf-idf terms.
//!
//! Deterministic (same input, same output) and total: any texts and any embeddings
//! (empty, NaN, zero or of differing lengths) give a summary, never a panic. A vector
//! that cannot be normalised, or whose length is not the collection's usual one, has
//! similarity 0 to everything.

use std::collections::{BTreeMap, BTreeSet};

const EMPTY_SUMMARY: &str = "The collection has no current memories yet.";
const MAX_CLUSTERS: usize = 5;
const MAX_ITERATIONS: usize = 10;
/// A sentence taken from a memory, in characters, before the "…".
const SENTENCE_MAX_CHARS: usize = 200;
/// Terms shorter or longer than this (in characters) are not theme candidates.
const TERM_MIN_CHARS: usize = 3;
const TERM_MAX_CHARS: usize = 40;
const TERMS_PER_THEME: usize = 2;

/// Never theme terms. Sorted, lowercase (looked up by binary search).
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
    "any", "are", "aren", "as", "at", "be", "because", "been", "before", "being", "below",
    "between", "both", "but", "by", "can", "cannot", "could", "couldn", "did", "didn", "do",
    "does", "doesn", "doing", "don", "done", "down", "during", "each", "either", "else",
    "etc", "even", "ever", "every", "few", "for", "from", "further", "get", "gets", "got",
    "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "however", "i", "if", "in", "into", "is",
    "isn", "it", "its", "itself", "just", "let", "like", "ll", "made", "make", "many", "me",
    "might", "more", "most", "much", "must", "mustn", "my", "myself", "neither", "no",
    "nor", "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "others",
    "our", "ours", "ourselves", "out", "over", "own", "per", "re", "really", "same",
    "shall", "she", "should", "shouldn", "since", "so", "some", "still", "such", "than",
    "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these",
    "they", "this", "those", "though", "through", "thus", "to", "too", "under", "until",
    "up", "upon", "us", "use", "used", "uses", "using", "ve", "very", "via", "was", "wasn",
    "way", "we", "were", "weren", "what", "whatever", "when", "where", "whether", "which",
    "while", "who", "whom", "whose", "why", "will", "with", "within", "without", "won",
    "would", "wouldn", "yet", "you", "your", "yours", "yourself", "yourselves",
];

/// One memory offered to the summary, in priority order (most important first).
#[derive(Debug, Clone, Copy)]
pub struct SummaryItem<'a> {
    pub text: &'a str,
    /// L2-normalised sentence embedding (384 dims in practice; do not assume a length;
    /// items may differ in length or contain NaN — such a vector has similarity 0 to
    /// everything).
    pub embedding: &'a [f32],
    /// Informational: the order of the items already carries their priority.
    pub importance: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Extractive {
    /// Plain sentences, never empty.
    pub summary: String,
    /// Short theme names (1-3 words each), unique, at most 5; empty only when there are
    /// no items.
    pub themes: Vec<String>,
}

/// Summarises `items` (most important first): a first sentence naming the themes, then
/// the central memory of each cluster, largest cluster first.
pub fn extractive_summary(items: &[SummaryItem<'_>]) -> Extractive {
    let n = items.len();
    if n == 0 {
        return Extractive {
            summary: EMPTY_SUMMARY.to_string(),
            themes: Vec::new(),
        };
    }

    let vectors = Vectors::new(items);
    let clusters = kmeans(&vectors, cluster_count(n));

    // (members, central item), largest first; ties: the earlier central item.
    let mut ranked: Vec<(Vec<usize>, usize)> = clusters
        .into_iter()
        .map(|members| {
            let central = central_member(&vectors, &members);
            (members, central)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));

    let terms: Vec<Vec<String>> = items.iter().map(|item| terms(item.text)).collect();
    let document_frequency = document_frequency(&terms);

    let mut themes: Vec<String> = Vec::new();
    for (members, _) in &ranked {
        if let Some(theme) = cluster_theme(members, &terms, &document_frequency, n) {
            if !themes.contains(&theme) {
                themes.push(theme);
            }
        }
    }
    themes.truncate(MAX_CLUSTERS);

    let noun = if n == 1 { "memory" } else { "memories" };
    let mut summary = if themes.is_empty() {
        format!("{n} {noun}.")
    } else {
        format!("{n} {noun} about {}.", join_list(&themes))
    };
    for (_, central) in &ranked {
        if let Some(sentence) = sentence(items[*central].text) {
            summary.push(' ');
            summary.push_str(&sentence);
        }
    }

    Extractive { summary, themes }
}

/// round(sqrt(n / 2)), between 1 and [`MAX_CLUSTERS`], and never more than `n`.
fn cluster_count(n: usize) -> usize {
    let k = (n as f64 / 2.0).sqrt().round() as usize;
    k.clamp(1, MAX_CLUSTERS).min(n.max(1))
}

/// The items' embeddings, normalised, one row of `dim` values each. A row is all zeros
/// for an embedding that is empty, not finite, zero, or not `dim` long.
struct Vectors {
    len: usize,
    dim: usize,
    rows: Vec<f64>,
}

impl Vectors {
    fn new(items: &[SummaryItem<'_>]) -> Self {
        let usable = |e: &[f32]| !e.is_empty() && e.iter().all(|x| x.is_finite()) && norm(e) > 0.0;
        // The most common usable length; ties: the one seen first.
        let mut lengths: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            if usable(item.embedding) {
                let entry = lengths.entry(item.embedding.len()).or_insert((0, i));
                entry.0 += 1;
            }
        }
        let dim = lengths
            .iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
            .map_or(0, |(len, _)| *len);

        let mut rows = vec![0.0; items.len() * dim];
        for (i, item) in items.iter().enumerate() {
            let e = item.embedding;
            if e.len() == dim && usable(e) {
                let norm = norm(e);
                for (slot, x) in rows[i * dim..(i + 1) * dim].iter_mut().zip(e) {
                    *slot = f64::from(*x) / norm;
                }
            }
        }
        Vectors {
            len: items.len(),
            dim,
            rows,
        }
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.rows[i * self.dim..(i + 1) * self.dim]
    }
}

/// L2 norm in f64 (finite for any finite f32 input).
fn norm(e: &[f32]) -> f64 {
    e.iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scales `v` to unit length, or to zeros if it has none.
fn normalise(v: &mut [f64]) {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Spherical k-means with farthest-point initialisation from item 0. Returns the
/// non-empty clusters, each as ascending item indexes.
fn kmeans(vectors: &Vectors, k: usize) -> Vec<Vec<usize>> {
    let mut centroids = farthest_points(vectors, k);
    let mut assignment: Vec<usize> = Vec::new();
    for _ in 0..MAX_ITERATIONS {
        let mut next: Vec<usize> = (0..vectors.len)
            .map(|i| nearest(vectors.row(i), &centroids))
            .collect();
        // Drop empty clusters, keeping the others' order.
        let mut used = vec![false; centroids.len()];
        for &c in &next {
            used[c] = true;
        }
        if used.iter().any(|u| !u) {
            let mut renumber = vec![0; centroids.len()];
            let mut kept = 0;
            for (c, u) in used.iter().enumerate() {
                renumber[c] = kept;
                kept += usize::from(*u);
            }
            next.iter_mut().for_each(|c| *c = renumber[*c]);
            let mut flags = used.iter();
            centroids.retain(|_| flags.next().copied().unwrap_or(false));
        }
        let changed = next != assignment;
        assignment = next;
        if !changed {
            break;
        }
        centroids = recompute(vectors, &assignment, centroids.len());
    }

    let mut clusters = vec![Vec::new(); centroids.len()];
    for (i, c) in assignment.into_iter().enumerate() {
        clusters[c].push(i);
    }
    clusters.retain(|members| !members.is_empty());
    clusters
}

/// Up to `k` distinct items as starting centroids: item 0, then repeatedly the item least
/// similar to its most similar chosen one (ties: the earlier item).
fn farthest_points(vectors: &Vectors, k: usize) -> Vec<Vec<f64>> {
    let n = vectors.len;
    if n == 0 {
        return Vec::new();
    }
    let mut chosen = vec![false; n];
    chosen[0] = true;
    let mut centers = vec![0];
    let mut closest: Vec<f64> = (0..n)
        .map(|i| dot(vectors.row(i), vectors.row(0)))
        .collect();
    while centers.len() < k {
        let mut pick: Option<usize> = None;
        for i in (0..n).filter(|i| !chosen[*i]) {
            if pick.is_none_or(|p| closest[i] < closest[p]) {
                pick = Some(i);
            }
        }
        let Some(p) = pick else { break };
        chosen[p] = true;
        centers.push(p);
        for (i, c) in closest.iter_mut().enumerate() {
            *c = c.max(dot(vectors.row(i), vectors.row(p)));
        }
    }
    centers
        .into_iter()
        .map(|c| vectors.row(c).to_vec())
        .collect()
}

/// The most similar centroid (ties: the first).
fn nearest(v: &[f64], centroids: &[Vec<f64>]) -> usize {
    let mut best = 0;
    let mut best_sim = f64::NEG_INFINITY;
    for (c, centroid) in centroids.iter().enumerate() {
        let sim = dot(v, centroid);
        if sim > best_sim {
            best = c;
            best_sim = sim;
        }
    }
    best
}

/// Each cluster's normalised mean.
fn recompute(vectors: &Vectors, assignment: &[usize], k: usize) -> Vec<Vec<f64>> {
    let mut centroids = vec![vec![0.0; vectors.dim]; k];
    for (i, &c) in assignment.iter().enumerate() {
        for (slot, x) in centroids[c].iter_mut().zip(vectors.row(i)) {
            *slot += x;
        }
    }
    centroids.iter_mut().for_each(|c| normalise(c));
    centroids
}

/// The member with the highest mean similarity to the other members (ties: the earlier).
/// Uses the members' sum: sum of similarities to the others = v·S − v·v.
fn central_member(vectors: &Vectors, members: &[usize]) -> usize {
    let mut sum = vec![0.0; vectors.dim];
    for &i in members {
        for (slot, x) in sum.iter_mut().zip(vectors.row(i)) {
            *slot += x;
        }
    }
    let mut best = members.first().copied().unwrap_or(0);
    let mut best_score = f64::NEG_INFINITY;
    for &i in members {
        let v = vectors.row(i);
        let score = dot(v, &sum) - dot(v, v);
        if score > best_score {
            best = i;
            best_score = score;
        }
    }
    best
}

/// Lowercased tokens of letters and digits that can name a theme: 3 to 40 characters,
/// not purely numeric, not stop words. In text order, repeats kept.
fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|token| !token.is_empty())
        .map(str::to_lowercase)
        .filter(|term| {
            let chars = term.chars().count();
            (TERM_MIN_CHARS..=TERM_MAX_CHARS).contains(&chars)
                && !term.chars().all(char::is_numeric)
                && STOP_WORDS.binary_search(&term.as_str()).is_err()
        })
        .collect()
}

/// In how many items each term occurs.
fn document_frequency(terms: &[Vec<String>]) -> BTreeMap<&str, usize> {
    let mut df = BTreeMap::new();
    for item in terms {
        let unique: BTreeSet<&str> = item.iter().map(String::as_str).collect();
        for term in unique {
            *df.entry(term).or_insert(0) += 1;
        }
    }
    df
}

/// The cluster's top terms by tf-idf, joined by a space; ties: the term met first in
/// the cluster. `None` when no member has a usable term.
fn cluster_theme(
    members: &[usize],
    terms: &[Vec<String>],
    df: &BTreeMap<&str, usize>,
    n: usize,
) -> Option<String> {
    // term -> (count in the cluster, first position met)
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut position = 0;
    for &i in members {
        for term in &terms[i] {
            counts.entry(term.as_str()).or_insert((0, position)).0 += 1;
            position += 1;
        }
    }
    let mut scored: Vec<(f64, usize, &str)> = counts
        .into_iter()
        .map(|(term, (count, first))| {
            let df = df.get(term).copied().unwrap_or(1).max(1);
            let idf = (1.0 + n as f64 / df as f64).ln();
            (count as f64 * idf, first, term)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let top: Vec<&str> = scored
        .iter()
        .take(TERMS_PER_THEME)
        .map(|(_, _, term)| *term)
        .collect();
    (!top.is_empty()).then(|| top.join(" "))
}

/// A memory's text as one sentence: whitespace collapsed, cut to
/// [`SENTENCE_MAX_CHARS`] with "…", ended with a full stop if it has no final
/// punctuation. `None` for blank text.
fn sentence(text: &str) -> Option<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    let mut sentence = match collapsed.char_indices().nth(SENTENCE_MAX_CHARS) {
        Some((cut, _)) => {
            let mut kept = collapsed[..cut].trim_end().to_string();
            kept.push('…');
            kept
        }
        None => collapsed,
    };
    if !sentence.ends_with(['.', '!', '?', '…']) {
        sentence.push('.');
    }
    Some(sentence)
}

/// "a", "a and b", "a, b and c".
fn join_list(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    /// A unit vector near axis `topic` of 8 dims, with small deterministic noise.
    fn near(topic: usize, seed: usize) -> Vec<f32> {
        unit(
            (0..8)
                .map(|j| {
                    let noise = ((seed * 7 + j * 3) % 5) as f32 * 0.03;
                    if j == topic {
                        1.0 + noise
                    } else {
                        noise
                    }
                })
                .collect(),
        )
    }

    fn items<'a>(texts: &[&'a str], embeddings: &'a [Vec<f32>]) -> Vec<SummaryItem<'a>> {
        texts
            .iter()
            .zip(embeddings)
            .map(|(text, embedding)| SummaryItem {
                text,
                embedding,
                importance: 0.5,
            })
            .collect()
    }

    fn assert_themes_well_formed(out: &Extractive) {
        assert!(out.themes.len() <= 5, "{:?}", out.themes);
        let unique: BTreeSet<&String> = out.themes.iter().collect();
        assert_eq!(unique.len(), out.themes.len(), "{:?}", out.themes);
        for theme in &out.themes {
            let words = theme.split(' ').count();
            assert!((1..=3).contains(&words), "{theme:?}");
        }
    }

    const BILLING: [&str; 3] = [
        "Invoice billing failed for customer Acme",
        "Billing cycle moved: invoices are now sent monthly",
        "The billing dashboard shows overdue invoice totals",
    ];
    const RUST: [&str; 3] = [
        "Rust compiler upgrade broke the build",
        "Rust borrow checker error in the parser crate",
        "Migrated the parser to the Rust 2021 edition",
    ];

    fn two_topics() -> (Vec<&'static str>, Vec<Vec<f32>>) {
        let texts: Vec<&str> = BILLING.iter().chain(RUST.iter()).copied().collect();
        let embeddings = (0..6).map(|i| near(i / 3, i)).collect();
        (texts, embeddings)
    }

    #[test]
    fn stop_words_are_sorted_lowercase_and_unique() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| *w == w.to_lowercase()));
        for word in [
            "the", "and", "with", "that", "were", "about", "using", "done",
        ] {
            assert!(STOP_WORDS.binary_search(&word).is_ok(), "{word}");
        }
    }

    #[test]
    fn cluster_count_follows_the_square_root_rule() {
        let cases = [
            (1, 1),
            (2, 1),
            (4, 1),
            (5, 2),
            (8, 2),
            (13, 3),
            (18, 3),
            (32, 4),
        ];
        for (n, k) in cases {
            assert_eq!(cluster_count(n), k, "n = {n}");
        }
        assert_eq!(cluster_count(50), 5);
        assert_eq!(cluster_count(10_000), 5);
    }

    #[test]
    fn no_items_give_the_empty_summary() {
        let out = extractive_summary(&[]);
        assert_eq!(out.summary, "The collection has no current memories yet.");
        assert!(out.themes.is_empty());
    }

    #[test]
    fn a_single_item_is_its_own_summary() {
        let embedding = near(0, 0);
        let out = extractive_summary(&items(&["  Deploys run   on Fridays  "], &[embedding]));
        assert_eq!(out.themes, vec!["deploys run".to_string()]);
        assert_eq!(
            out.summary,
            "1 memory about deploys run. Deploys run on Fridays."
        );
    }

    #[test]
    fn two_clear_topics_give_two_themes_and_their_central_memories() {
        let (texts, embeddings) = two_topics();
        let out = extractive_summary(&items(&texts, &embeddings));
        assert_themes_well_formed(&out);
        assert_eq!(out.themes.len(), 2, "{:?}", out.themes);

        let words_in = |theme: &str, texts: &[&str]| {
            let joined = texts.join(" ").to_lowercase();
            theme.split(' ').all(|word| joined.contains(word))
        };
        // Equal sizes: the billing cluster's central item comes first.
        assert!(words_in(&out.themes[0], &BILLING), "{:?}", out.themes);
        assert!(words_in(&out.themes[1], &RUST), "{:?}", out.themes);
        assert!(out.themes[0].contains("billing"), "{:?}", out.themes);
        assert!(out.themes[1].contains("rust"), "{:?}", out.themes);

        let expected_start = format!("6 memories about {} and {}. ", out.themes[0], out.themes[1]);
        assert!(out.summary.starts_with(&expected_start), "{}", out.summary);
        let quoted = |group: &[&str]| {
            group
                .iter()
                .filter(|t| out.summary.contains(&format!("{t}.")))
                .count()
        };
        assert_eq!(quoted(&BILLING), 1, "{}", out.summary);
        assert_eq!(quoted(&RUST), 1, "{}", out.summary);
        let billing_at = BILLING.iter().find_map(|t| out.summary.find(t));
        let rust_at = RUST.iter().find_map(|t| out.summary.find(t));
        assert!(billing_at < rust_at, "{}", out.summary);
    }

    #[test]
    fn the_central_memory_is_the_one_most_similar_to_the_others() {
        // Item 1 sits between items 0 and 2.
        let embeddings = vec![
            unit(vec![1.0, 0.0, 0.0]),
            unit(vec![1.0, 1.0, 0.0]),
            unit(vec![0.0, 1.0, 0.0]),
        ];
        let out = extractive_summary(&items(
            &["Left edge", "Middle ground", "Right edge"],
            &embeddings,
        ));
        assert_eq!(out.summary.matches('.').count(), 2, "{}", out.summary);
        assert!(out.summary.ends_with(" Middle ground."), "{}", out.summary);

        // Identical vectors: ties go to the earlier item.
        let same = vec![unit(vec![1.0, 2.0]); 3];
        let out = extractive_summary(&items(&["First", "Second", "Third"], &same));
        assert!(out.summary.ends_with(" First."), "{}", out.summary);
    }

    #[test]
    fn the_larger_cluster_comes_first() {
        let texts = [
            "Kafka consumer lag alert",
            "Postgres vacuum schedule",
            "Postgres replica failover drill",
            "Postgres index bloat report",
            "Postgres connection pool sizing",
        ];
        let embeddings = vec![near(1, 0), near(0, 1), near(0, 2), near(0, 3), near(0, 4)];
        let out = extractive_summary(&items(&texts, &embeddings));
        assert_eq!(out.themes.len(), 2, "{:?}", out.themes);
        assert!(out.themes[0].contains("postgres"), "{:?}", out.themes);
        assert!(
            out.summary.starts_with("5 memories about "),
            "{}",
            out.summary
        );
        assert!(
            out.summary.ends_with(" Kafka consumer lag alert."),
            "{}",
            out.summary
        );
    }

    #[test]
    fn the_same_input_gives_the_same_output() {
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let embeddings: Vec<Vec<f32>> = (0..40)
            .map(|_| unit((0..16).map(|_| next()).collect()))
            .collect();
        let texts: Vec<String> = (0..40)
            .map(|i| format!("Note {i} about topic{} and area{}", i % 7, i % 3))
            .collect();
        let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let input = items(&text_refs, &embeddings);
        let first = extractive_summary(&input);
        let second = extractive_summary(&input);
        assert_eq!(first, second);
        assert_themes_well_formed(&first);
        assert!(
            first.summary.starts_with("40 memories"),
            "{}",
            first.summary
        );
    }

    #[test]
    fn themes_are_at_most_five_and_unique() {
        let topics = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
        ];
        let texts: Vec<String> = (0..80)
            .map(|i| format!("{} report number {i} with shared words", topics[i % 8]))
            .collect();
        let embeddings: Vec<Vec<f32>> = (0..80).map(|i| near(i % 8, i)).collect();
        let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let out = extractive_summary(&items(&text_refs, &embeddings));
        assert_themes_well_formed(&out);
        assert!(!out.themes.is_empty());

        // Clusters with the same top terms still give one theme.
        let same: Vec<Vec<f32>> = (0..10).map(|i| near(i % 2, i)).collect();
        let out = extractive_summary(&items(&["Shared rollout notes"; 10], &same));
        assert_eq!(out.themes, vec!["shared rollout".to_string()]);
    }

    #[test]
    fn long_texts_are_cut_to_200_characters_with_an_ellipsis() {
        let long = "abcdefghij".repeat(100);
        let embedding = near(0, 0);
        let out = extractive_summary(&items(&[long.as_str()], std::slice::from_ref(&embedding)));
        // A 1000-character token is no theme.
        assert!(out.themes.is_empty());
        assert_eq!(out.summary, format!("1 memory. {}…", &long[..200]));

        let words = "word ".repeat(200);
        let cut = sentence(&words).unwrap();
        assert!(cut.chars().count() <= 201, "{}", cut.chars().count());
        assert!(cut.ends_with("word…") || cut.ends_with("wor…"), "{cut}");

        let accented = "é".repeat(300);
        let cut = sentence(&accented).unwrap();
        assert_eq!(cut, format!("{}…", "é".repeat(200)));

        assert_eq!(
            sentence(&"x".repeat(200)).unwrap(),
            format!("{}.", "x".repeat(200))
        );
        assert_eq!(sentence("Done!").unwrap(), "Done!");
        assert_eq!(sentence("Why?").unwrap(), "Why?");
        assert_eq!(sentence(" \t\n "), None);
    }

    #[test]
    fn broken_embeddings_do_not_panic() {
        let embeddings: Vec<Vec<f32>> = vec![
            vec![f32::NAN; 8],
            vec![0.0; 8],
            vec![1.0],
            vec![],
            vec![f32::INFINITY, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            near(0, 1),
            near(1, 2),
            vec![f32::MAX; 8],
            vec![f32::MIN_POSITIVE / 4.0; 8],
            near(0, 3),
        ];
        let texts = [
            "NaN vector memory",
            "Zero vector memory",
            "Short vector memory",
            "Empty vector memory",
            "Infinite vector memory",
            "Valid vector one",
            "Valid vector two",
            "Huge vector memory",
            "Subnormal vector memory",
            "Valid vector three",
        ];
        let out = extractive_summary(&items(&texts, &embeddings));
        assert!(out.summary.starts_with("10 memories"), "{}", out.summary);
        assert_themes_well_formed(&out);
        assert!(!out.themes.is_empty());

        // Nothing usable at all.
        let none: Vec<Vec<f32>> = vec![vec![], vec![f32::NAN], vec![0.0, 0.0], vec![]];
        let out = extractive_summary(&items(&texts[..4], &none));
        assert!(
            out.summary.starts_with("4 memories about "),
            "{}",
            out.summary
        );
        assert_themes_well_formed(&out);
    }

    #[test]
    fn stop_words_and_numbers_never_name_a_theme() {
        let texts = [
            "The thing that was done and it is about what they have",
            "They were using it with them, and there would be more of this",
            "It should have been done before, but it could not be used 2024 12345",
        ];
        let embeddings: Vec<Vec<f32>> = (0..3).map(|i| near(0, i)).collect();
        let out = extractive_summary(&items(&texts, &embeddings));
        for theme in &out.themes {
            for word in theme.split(' ') {
                assert!(STOP_WORDS.binary_search(&word).is_err(), "{theme:?}");
                assert!(!word.chars().all(char::is_numeric), "{theme:?}");
            }
        }
        assert_eq!(out.themes, vec!["thing".to_string()]);

        let only_stop = ["the and for with", "this was from", "a 42 1999"];
        let out = extractive_summary(&items(&only_stop, &embeddings));
        assert!(out.themes.is_empty());
        assert!(out.summary.starts_with("3 memories. "), "{}", out.summary);
    }

    #[test]
    fn theme_lists_read_as_english() {
        let list =
            |words: &[&str]| join_list(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert_eq!(list(&[]), "");
        assert_eq!(list(&["a"]), "a");
        assert_eq!(list(&["a", "b"]), "a and b");
        assert_eq!(list(&["a", "b", "c"]), "a, b and c");
    }

    fn component() -> impl Strategy<Value = f32> {
        prop_oneof![any::<f32>(), (-2i8..=2).prop_map(f32::from)]
    }

    proptest! {
        /// Any texts and any embeddings give a well-formed summary, never a panic.
        #[test]
        fn any_input_gives_a_well_formed_summary(
            raw in prop::collection::vec(
                (any::<String>(), prop::collection::vec(component(), 0..6), any::<f64>()),
                0..30,
            ),
        ) {
            let input: Vec<SummaryItem<'_>> = raw
                .iter()
                .map(|(text, embedding, importance)| SummaryItem {
                    text,
                    embedding,
                    importance: *importance,
                })
                .collect();
            let out = extractive_summary(&input);
            prop_assert!(!out.summary.is_empty());
            prop_assert!(out.themes.len() <= 5);
            let unique: BTreeSet<&String> = out.themes.iter().collect();
            prop_assert_eq!(unique.len(), out.themes.len());
            if input.is_empty() {
                prop_assert!(out.themes.is_empty());
            }
            prop_assert_eq!(&out, &extractive_summary(&input));
        }
    }
}
