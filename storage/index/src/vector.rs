//! The vector index of one collection: usearch HNSW, cosine, half-precision.
//!
//! Keys are the memories' `index_key`s (u64, unique per collection, new on every re-embed).
//! Adds and searches run concurrently (usearch is thread-safe for both); only growing the
//! capacity needs the exclusive lock. Removed or replaced keys may linger after a crash;
//! every search filters candidates through the published snapshot, so they are never
//! returned.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::IndexError;

/// How vectors are stored in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    F32,
    /// The default: half the memory of f32; `memvault eval --quantization` measures the
    /// ranking against f32 (README, Search).
    F16,
    I8,
}

impl Quantization {
    fn scalar(self) -> ScalarKind {
        match self {
            Self::F32 => ScalarKind::F32,
            Self::F16 => ScalarKind::F16,
            Self::I8 => ScalarKind::I8,
        }
    }
}
/// usearch's thread slots: concurrent searches beyond this wait for a free slot.
const THREADS: usize = 64;
/// HNSW breadth at query time; wide enough for a 50-result hybrid window.
const EXPANSION_SEARCH: usize = 128;

pub struct VectorIndex {
    index: RwLock<Index>,
    dimensions: usize,
    /// The highest key ever added (or recorded as saved).
    highest: AtomicU64,
}

/// A candidate and its cosine similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    pub key: u64,
    pub similarity: f32,
}

impl VectorIndex {
    pub fn new(dimensions: usize) -> Result<Self, IndexError> {
        Self::with_quantization(dimensions, Quantization::F16)
    }

    pub fn with_quantization(
        dimensions: usize,
        quantization: Quantization,
    ) -> Result<Self, IndexError> {
        let options = IndexOptions {
            dimensions,
            metric: MetricKind::Cos,
            quantization: quantization.scalar(),
            connectivity: 0,
            expansion_add: 0,
            expansion_search: EXPANSION_SEARCH,
            multi: false,
        };
        let index = Index::new(&options).map_err(usearch_error)?;
        index
            .reserve_capacity_and_threads(1024, THREADS)
            .map_err(usearch_error)?;
        Ok(Self {
            index: RwLock::new(index),
            dimensions,
            highest: AtomicU64::new(0),
        })
    }

    /// Loads a saved index; fails when the file is missing, unreadable or of another shape.
    pub fn load(path: &Path, dimensions: usize) -> Result<Self, IndexError> {
        let loaded = Self::new(dimensions)?;
        {
            let index = loaded.write();
            index.load(&path.to_string_lossy()).map_err(usearch_error)?;
            if index.dimensions() != dimensions {
                return Err(IndexError::Corrupt(format!(
                    "{} has {} dimensions, expected {dimensions}",
                    path.display(),
                    index.dimensions()
                )));
            }
            index.change_expansion_search(EXPANSION_SEARCH);
            // Room for an eighth more before the first growth (which doubles): usearch
            // sizes its per-slot tables by the capacity, so twice the size held tables for
            // a million more slots at a million vectors, for adds that may never come.
            let capacity = (index.size() + index.size() / 8).max(1024);
            index
                .reserve_capacity_and_threads(capacity, THREADS)
                .map_err(usearch_error)?;
        }
        Ok(loaded)
    }

    /// Writes the index to `path` atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), IndexError> {
        let temporary = path.with_extension("tmp");
        self.read()
            .save(&temporary.to_string_lossy())
            .map_err(usearch_error)?;
        std::fs::rename(&temporary, path).map_err(|error| IndexError::Io(error.to_string()))
    }

    pub fn len(&self) -> usize {
        self.read().size()
    }

    /// Bytes the index holds in memory.
    pub fn memory_bytes(&self) -> usize {
        self.read().memory_usage()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn add(&self, key: u64, vector: &[f32]) -> Result<(), IndexError> {
        if vector.len() != self.dimensions {
            return Err(IndexError::Corrupt(format!(
                "a vector of {} dimensions for an index of {}",
                vector.len(),
                self.dimensions
            )));
        }
        self.ensure_capacity(1)?;
        let index = self.read();
        if index.contains(key) {
            index.remove(key).map_err(usearch_error)?;
        }
        index.add(key, vector).map_err(usearch_error)?;
        self.note_key(key);
        Ok(())
    }

    pub fn contains(&self, key: u64) -> bool {
        self.read().contains(key)
    }

    /// The highest key added or noted.
    pub fn highest_key(&self) -> u64 {
        self.highest.load(Ordering::SeqCst)
    }

    /// Records that keys up to `key` are accounted for (after loading a saved index).
    pub fn note_key(&self, key: u64) {
        self.highest.fetch_max(key, Ordering::SeqCst);
    }

    pub fn remove(&self, key: u64) -> Result<(), IndexError> {
        let index = self.read();
        if index.contains(key) {
            index.remove(key).map_err(usearch_error)?;
        }
        Ok(())
    }

    /// Grows the capacity (doubling) so `extra` more vectors fit.
    pub fn ensure_capacity(&self, extra: usize) -> Result<(), IndexError> {
        {
            let index = self.read();
            if index.size() + extra <= index.capacity() {
                return Ok(());
            }
        }
        let index = self.write();
        let needed = index.size() + extra;
        if needed > index.capacity() {
            let capacity = needed.max(index.capacity() * 2).max(1024);
            index
                .reserve_capacity_and_threads(capacity, THREADS)
                .map_err(usearch_error)?;
        }
        Ok(())
    }

    /// The approximate `count` nearest keys that pass `filter`, best first.
    pub fn search(
        &self,
        query: &[f32],
        count: usize,
        filter: impl Fn(u64) -> bool,
    ) -> Result<Vec<VectorHit>, IndexError> {
        if count == 0 || query.len() != self.dimensions {
            return Ok(Vec::new());
        }
        let index = self.read();
        if index.size() == 0 {
            return Ok(Vec::new());
        }
        let matches = index
            .filtered_search(query, count, filter)
            .map_err(usearch_error)?;
        Ok(hits(matches))
    }

    /// Exact cosine similarity of `query` to each key's stored vector (keys not in the
    /// index are skipped); one lock and one buffer for the whole batch.
    pub fn score(&self, query: &[f32], keys: &[u64]) -> Vec<(u64, f32)> {
        let index = self.read();
        let mut buffer = vec![0.0f32; self.dimensions];
        keys.iter()
            .filter_map(|&key| match index.get(key, &mut buffer) {
                Ok(found) if found > 0 => Some((key, dot(query, &buffer))),
                _ => None,
            })
            .collect()
    }

    /// The stored (dequantised) vector of `key`.
    pub fn vector(&self, key: u64) -> Option<Vec<f32>> {
        let index = self.read();
        let mut buffer = vec![0.0f32; self.dimensions];
        match index.get(key, &mut buffer) {
            Ok(found) if found > 0 => Some(buffer),
            _ => None,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.index
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn hits(matches: usearch::ffi::Matches) -> Vec<VectorHit> {
    matches
        .keys
        .into_iter()
        .zip(matches.distances)
        .map(|(key, distance)| VectorHit {
            key,
            // usearch's cosine distance is 1 - cosine similarity.
            similarity: 1.0 - distance,
        })
        .collect()
}

fn usearch_error(error: impl std::fmt::Display) -> IndexError {
    IndexError::Vector(error.to_string())
}

/// Cosine similarity of two unit vectors (a dot product), for exact scoring.
pub fn dot(left: &[f32], right: &[f32]) -> f32 {
    left.iter().zip(right).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(values: &[f32]) -> Vec<f32> {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter().map(|v| v / norm).collect()
    }

    #[test]
    fn finds_nearest_filters_and_survives_save_and_load() {
        let index = VectorIndex::new(3).unwrap();
        index.add(1, &unit(&[1.0, 0.0, 0.0])).unwrap();
        index.add(2, &unit(&[0.9, 0.1, 0.0])).unwrap();
        index.add(3, &unit(&[0.0, 0.0, 1.0])).unwrap();
        let hits = index.search(&unit(&[1.0, 0.0, 0.0]), 2, |_| true).unwrap();
        assert_eq!(
            hits.iter().map(|hit| hit.key).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert!((hits[0].similarity - 1.0).abs() < 1e-3);
        let filtered = index
            .search(&unit(&[1.0, 0.0, 0.0]), 2, |key| key != 1)
            .unwrap();
        assert_eq!(filtered[0].key, 2);

        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("vectors.usearch");
        index.save(&path).unwrap();
        let loaded = VectorIndex::load(&path, 3).unwrap();
        assert_eq!(loaded.len(), 3);
        assert!(VectorIndex::load(&path, 4).is_err());
        loaded.remove(1).unwrap();
        let hits = loaded.search(&unit(&[1.0, 0.0, 0.0]), 1, |_| true).unwrap();
        assert_eq!(hits[0].key, 2);
        assert!(loaded.vector(3).is_some());
        assert!(loaded.vector(1).is_none());
    }

    #[test]
    fn grows_past_its_initial_capacity() {
        let index = VectorIndex::new(2).unwrap();
        for key in 0..3000u64 {
            let angle = key as f32 / 3000.0;
            index.add(key, &[angle.cos(), angle.sin()]).unwrap();
        }
        assert_eq!(index.len(), 3000);
    }
}
