//! all-MiniLM-L6-v2 as an ONNX graph, built from the pinned safetensors at start-up (no
//! torch, no exported file to trust): BERT's embeddings, six encoder layers and the last
//! hidden state; pooling and normalisation stay in Rust, as with candle.
//!
//! Two builds of the same weights:
//! - [`Precision::Fp32`]: standard operators only, the weights as they are. ONNX Runtime's
//!   optimizer fuses the layer norms, GELUs and bias additions when the session is made;
//!   its vectors equal candle's.
//! - [`Precision::Int8`]: the dense layers' weights quantized to int8 per output column
//!   (symmetric, 7-bit range so no CPU's u8×s8 kernels saturate), run by the contrib
//!   `DynamicQuantizeMatMul`, which quantizes each activation row on the fly. The
//!   embeddings, attention products, layer norms and (see [`INT8_KEEPS_FFN_OUTPUT`]) the
//!   feed-forward output layers stay in fp32. Its vectors are close to fp32 but not equal,
//!   so it is a model of its own name.
//!
//! Three shortcuts that change no result: the query, key and value projections are one
//! matrix product split in three; the attention scale 1/√32 is folded into the query
//! weights; and the token-type embedding (every text is one segment, type 0) is added to
//! the position table once here.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};

use super::proto::{Attribute, Dim, ElementType, GraphWriter};
use crate::EmbeddingError;

/// How the dense layers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    Fp32,
    Int8,
}

/// The int8 build leaves each layer's feed-forward output product (1536 → 384) in fp32.
/// Measured (docs/embedding-models.md): with it quantized too, single texts embed 1.4×
/// faster but MS MARCO's vector nDCG@10 drops 0.0071, past the 0.005 a new default may
/// lose; kept in fp32, the largest loss on any public set and mode is 0.0030.
pub(crate) const INT8_KEEPS_FFN_OUTPUT: bool = true;

const HIDDEN: usize = 384;
const HEADS: i64 = 12;
const HEAD_SIZE: i64 = 32;
const LAYERS: usize = 6;
const EPSILON: f32 = 1e-12;
/// Added to the attention scores of padding (sentence-transformers' BERT uses the same).
const MASKED: f32 = -10_000.0;
/// The weights' 7-bit symmetric range.
const INT8_MAX: f32 = 63.0;

/// The graph's inputs and output.
pub(crate) const INPUT_IDS: &str = "input_ids";
pub(crate) const ATTENTION_MASK: &str = "attention_mask";
pub(crate) const HIDDEN_STATE: &str = "last_hidden_state";

/// The name of the word-embedding table in the graph.
pub(crate) const WORD_EMBEDDINGS: &str = "word_embeddings";

/// A built graph, and its largest weight apart for sessions to share.
pub(crate) struct Built {
    pub model: Vec<u8>,
    /// [`WORD_EMBEDDINGS`]'s shape and values (fp32 in both precisions, 45 MiB).
    pub word_embeddings: (Vec<i64>, Vec<f32>),
}

/// The serialized model of the weights in `safetensors`.
pub(crate) fn build(safetensors: &Path, precision: Precision) -> Result<Built, EmbeddingError> {
    let weights = Weights::load(safetensors)?;
    let (words, shape) = weights.get("embeddings.word_embeddings.weight")?;
    let mut builder = Builder {
        graph: GraphWriter::default(),
        weights,
        precision,
    };
    builder.model()?;
    Ok(Built {
        model: builder.graph.into_model("all-MiniLM-L6-v2", "memvault"),
        word_embeddings: (shape.iter().map(|&dim| dim as i64).collect(), words),
    })
}

struct Weights(HashMap<String, Tensor>);

impl Weights {
    fn load(path: &Path) -> Result<Self, EmbeddingError> {
        candle_core::safetensors::load(path, &Device::Cpu)
            .map(Weights)
            .map_err(|error| EmbeddingError::Load(format!("model.safetensors: {error}")))
    }

    /// A tensor's values (row-major) and shape.
    fn get(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>), EmbeddingError> {
        let missing = || EmbeddingError::Load(format!("model.safetensors has no {name}"));
        let tensor = self.0.get(name).ok_or_else(missing)?;
        let shape = tensor.dims().to_vec();
        let values = tensor
            .flatten_all()
            .and_then(|flat| flat.to_vec1::<f32>())
            .map_err(|error| EmbeddingError::Load(format!("{name}: {error}")))?;
        Ok((values, shape))
    }

    /// A linear layer's weight `[out, in]` transposed to `[in, out]` (ONNX's `x · W`), and
    /// its bias.
    fn linear(&self, prefix: &str) -> Result<(Vec<f32>, usize, usize, Vec<f32>), EmbeddingError> {
        let (weight, shape) = self.get(&format!("{prefix}.weight"))?;
        let (bias, _) = self.get(&format!("{prefix}.bias"))?;
        let [outputs, inputs] = shape[..] else {
            return Err(EmbeddingError::Load(format!(
                "{prefix}.weight is not a matrix"
            )));
        };
        let mut transposed = vec![0.0; weight.len()];
        for row in 0..outputs {
            for column in 0..inputs {
                transposed[column * outputs + row] = weight[row * inputs + column];
            }
        }
        Ok((transposed, inputs, outputs, bias))
    }
}

struct Builder {
    graph: GraphWriter,
    weights: Weights,
    precision: Precision,
}

impl Builder {
    fn model(&mut self) -> Result<(), EmbeddingError> {
        let batch_by_tokens = [Dim::Named("batch"), Dim::Named("tokens")];
        self.graph
            .input(INPUT_IDS, ElementType::Int64, &batch_by_tokens);
        self.graph
            .input(ATTENTION_MASK, ElementType::Int64, &batch_by_tokens);
        self.constants();
        let mut hidden = self.embeddings()?;
        let mask = self.attention_bias();
        for layer in 0..LAYERS {
            hidden = self.layer(layer, &hidden, &mask)?;
        }
        self.graph
            .node("Identity", "", &[&hidden], &[HIDDEN_STATE], &[]);
        self.graph.output(
            HIDDEN_STATE,
            ElementType::Float,
            &[
                Dim::Named("batch"),
                Dim::Named("tokens"),
                Dim::Fixed(HIDDEN as i64),
            ],
        );
        Ok(())
    }

    /// Shapes and scalars shared by every layer.
    fn constants(&mut self) {
        let graph = &mut self.graph;
        graph.int64s("zero", &[], &[0]);
        graph.int64s("one", &[], &[1]);
        graph.int64s("heads_shape", &[4], &[0, 0, HEADS, HEAD_SIZE]);
        graph.int64s("hidden_shape", &[3], &[0, 0, HIDDEN as i64]);
        graph.int64s("qkv_split", &[3], &[HIDDEN as i64; 3]);
        graph.int64s("mask_axes", &[2], &[1, 2]);
        graph.floats("one_f", &[], &[1.0]);
        graph.floats("masked_f", &[], &[MASKED]);
        graph.floats("half_f", &[], &[0.5]);
        graph.floats("sqrt2_f", &[], &[std::f32::consts::SQRT_2]);
    }

    /// Word + position + token-type(0) embeddings, layer-normed.
    fn embeddings(&mut self) -> Result<String, EmbeddingError> {
        let (words, word_shape) = self.weights.get("embeddings.word_embeddings.weight")?;
        let (mut positions, position_shape) =
            self.weights.get("embeddings.position_embeddings.weight")?;
        let (types, _) = self
            .weights
            .get("embeddings.token_type_embeddings.weight")?;
        for row in positions.chunks_mut(HIDDEN) {
            for (value, type_value) in row.iter_mut().zip(&types[..HIDDEN]) {
                *value += type_value;
            }
        }
        let dims = |shape: &[usize]| shape.iter().map(|&dim| dim as i64).collect::<Vec<_>>();
        self.graph
            .floats(WORD_EMBEDDINGS, &dims(&word_shape), &words);
        self.graph
            .floats("position_embeddings", &dims(&position_shape), &positions);
        let graph = &mut self.graph;
        graph.node("Gather", "", &[WORD_EMBEDDINGS, INPUT_IDS], &["words"], &[]);
        graph.node("Shape", "", &[INPUT_IDS], &["ids_shape"], &[]);
        graph.node("Gather", "", &["ids_shape", "one"], &["tokens"], &[]);
        graph.node(
            "Range",
            "",
            &["zero", "tokens", "one"],
            &["position_ids"],
            &[],
        );
        graph.node(
            "Gather",
            "",
            &["position_embeddings", "position_ids"],
            &["positions"],
            &[],
        );
        graph.node("Add", "", &["words", "positions"], &["embedded"], &[]);
        self.layer_norm("embeddings.LayerNorm", "embedded")
    }

    /// `(1 - mask) · -10000`, shaped `[batch, 1, 1, tokens]` to add to every head's scores.
    fn attention_bias(&mut self) -> String {
        let graph = &mut self.graph;
        graph.node(
            "Cast",
            "",
            &[ATTENTION_MASK],
            &["mask_f"],
            &[Attribute::Int("to", ElementType::Float as i64)],
        );
        graph.node("Sub", "", &["one_f", "mask_f"], &["unmasked"], &[]);
        graph.node("Mul", "", &["unmasked", "masked_f"], &["mask_bias"], &[]);
        graph.node(
            "Unsqueeze",
            "",
            &["mask_bias", "mask_axes"],
            &["attention_bias"],
            &[],
        );
        "attention_bias".to_owned()
    }

    fn layer(&mut self, layer: usize, input: &str, mask: &str) -> Result<String, EmbeddingError> {
        let prefix = format!("encoder.layer.{layer}");
        // Attention: one product for query, key and value.
        let (mut weight, inputs, _, mut bias) = {
            let scale = 1.0 / (HEAD_SIZE as f32).sqrt();
            let (mut query, inputs, outputs, mut query_bias) = self
                .weights
                .linear(&format!("{prefix}.attention.self.query"))?;
            query.iter_mut().for_each(|value| *value *= scale);
            query_bias.iter_mut().for_each(|value| *value *= scale);
            (query, inputs, outputs, query_bias)
        };
        let (key, _, _, key_bias) = self
            .weights
            .linear(&format!("{prefix}.attention.self.key"))?;
        let (value, _, _, value_bias) = self
            .weights
            .linear(&format!("{prefix}.attention.self.value"))?;
        weight = interleave_columns(&[&weight, &key, &value], inputs);
        bias.extend_from_slice(&key_bias);
        bias.extend_from_slice(&value_bias);
        let qkv = self.dense(
            &format!("{prefix}.qkv"),
            input,
            &weight,
            inputs,
            3 * HIDDEN,
            &bias,
            true,
        );
        let [query, key, value] = [
            self.graph.name("q"),
            self.graph.name("k"),
            self.graph.name("v"),
        ];
        self.graph.node(
            "Split",
            "",
            &[&qkv, "qkv_split"],
            &[&query, &key, &value],
            &[Attribute::Int("axis", 2)],
        );
        let query = self.heads(&query, &[0, 2, 1, 3]);
        let key = self.heads(&key, &[0, 2, 3, 1]);
        let value = self.heads(&value, &[0, 2, 1, 3]);
        let scores = self.graph.name("scores");
        self.graph
            .node("MatMul", "", &[&query, &key], &[&scores], &[]);
        let masked = self.graph.name("masked");
        self.graph
            .node("Add", "", &[&scores, mask], &[&masked], &[]);
        let probabilities = self.graph.name("probabilities");
        self.graph.node(
            "Softmax",
            "",
            &[&masked],
            &[&probabilities],
            &[Attribute::Int("axis", -1)],
        );
        let context = self.graph.name("context");
        self.graph
            .node("MatMul", "", &[&probabilities, &value], &[&context], &[]);
        let merged = self.graph.name("merged");
        self.graph.node(
            "Transpose",
            "",
            &[&context],
            &[&merged],
            &[Attribute::Ints("perm", &[0, 2, 1, 3])],
        );
        let flat = self.graph.name("flat");
        self.graph
            .node("Reshape", "", &[&merged, "hidden_shape"], &[&flat], &[]);
        let attended = self.linear(&format!("{prefix}.attention.output.dense"), &flat, true)?;
        let residual = self.graph.name("residual");
        self.graph
            .node("Add", "", &[&attended, input], &[&residual], &[]);
        let attention_out =
            self.layer_norm(&format!("{prefix}.attention.output.LayerNorm"), &residual)?;
        // Feed-forward.
        let expanded = self.linear(
            &format!("{prefix}.intermediate.dense"),
            &attention_out,
            true,
        )?;
        let activated = self.gelu(&expanded);
        let quantize_output = !INT8_KEEPS_FFN_OUTPUT;
        let contracted = self.linear(
            &format!("{prefix}.output.dense"),
            &activated,
            quantize_output,
        )?;
        let residual = self.graph.name("residual");
        self.graph
            .node("Add", "", &[&contracted, &attention_out], &[&residual], &[]);
        self.layer_norm(&format!("{prefix}.output.LayerNorm"), &residual)
    }

    /// `[batch, tokens, 384]` → `[batch, 12, …]` in the order `perm` gives.
    fn heads(&mut self, input: &str, perm: &[i64]) -> String {
        let split = self.graph.name("split_heads");
        self.graph
            .node("Reshape", "", &[input, "heads_shape"], &[&split], &[]);
        let transposed = self.graph.name("heads");
        self.graph.node(
            "Transpose",
            "",
            &[&split],
            &[&transposed],
            &[Attribute::Ints("perm", perm)],
        );
        transposed
    }

    fn linear(
        &mut self,
        prefix: &str,
        input: &str,
        quantizable: bool,
    ) -> Result<String, EmbeddingError> {
        let (weight, inputs, outputs, bias) = self.weights.linear(prefix)?;
        Ok(self.dense(prefix, input, &weight, inputs, outputs, &bias, quantizable))
    }

    /// `input · weight + bias`, with `weight` `[inputs, outputs]`: in fp32, or quantized
    /// per output column when the build is int8 and this layer may be.
    #[allow(clippy::too_many_arguments)]
    fn dense(
        &mut self,
        prefix: &str,
        input: &str,
        weight: &[f32],
        inputs: usize,
        outputs: usize,
        bias: &[f32],
        quantizable: bool,
    ) -> String {
        let dims = [inputs as i64, outputs as i64];
        let bias_name = format!("{prefix}.bias");
        self.graph.floats(&bias_name, &[outputs as i64], bias);
        let output = self.graph.name("dense");
        if self.precision == Precision::Int8 && quantizable {
            let (quantized, scales) = quantize_columns(weight, outputs);
            let weight_name = format!("{prefix}.weight_int8");
            let scale_name = format!("{prefix}.weight_scale");
            self.graph.int8s(&weight_name, &dims, &quantized);
            self.graph.floats(&scale_name, &[outputs as i64], &scales);
            self.graph.node(
                "DynamicQuantizeMatMul",
                "com.microsoft",
                &[input, &weight_name, &scale_name, "", &bias_name],
                &[&output],
                &[],
            );
        } else {
            let weight_name = format!("{prefix}.weight_t");
            self.graph.floats(&weight_name, &dims, weight);
            let product = self.graph.name("product");
            self.graph
                .node("MatMul", "", &[input, &weight_name], &[&product], &[]);
            self.graph
                .node("Add", "", &[&product, &bias_name], &[&output], &[]);
        }
        output
    }

    /// The exact (erf) GELU: `x · ½ · (1 + erf(x / √2))`.
    fn gelu(&mut self, input: &str) -> String {
        let names: Vec<String> = ["scaled", "erf", "erf_plus_one", "halved", "gelu"]
            .iter()
            .map(|stem| self.graph.name(stem))
            .collect();
        let graph = &mut self.graph;
        graph.node("Div", "", &[input, "sqrt2_f"], &[&names[0]], &[]);
        graph.node("Erf", "", &[&names[0]], &[&names[1]], &[]);
        graph.node("Add", "", &[&names[1], "one_f"], &[&names[2]], &[]);
        graph.node("Mul", "", &[input, &names[2]], &[&names[3]], &[]);
        graph.node("Mul", "", &[&names[3], "half_f"], &[&names[4]], &[]);
        names[4].clone()
    }

    fn layer_norm(&mut self, prefix: &str, input: &str) -> Result<String, EmbeddingError> {
        let (gamma, _) = self.weights.get(&format!("{prefix}.weight"))?;
        let (beta, _) = self.weights.get(&format!("{prefix}.bias"))?;
        let [gamma_name, beta_name] = [format!("{prefix}.weight"), format!("{prefix}.bias")];
        self.graph
            .floats(&gamma_name, &[gamma.len() as i64], &gamma);
        self.graph.floats(&beta_name, &[beta.len() as i64], &beta);
        let output = self.graph.name("normed");
        self.graph.node(
            "LayerNormalization",
            "",
            &[input, &gamma_name, &beta_name],
            &[&output],
            &[
                Attribute::Int("axis", -1),
                Attribute::Float("epsilon", EPSILON),
            ],
        );
        Ok(output)
    }
}

/// `[inputs, a]`, `[inputs, b]`, … side by side: `[inputs, a + b + …]`.
fn interleave_columns(parts: &[&[f32]], inputs: usize) -> Vec<f32> {
    let mut joined = Vec::with_capacity(parts.iter().map(|part| part.len()).sum());
    for row in 0..inputs {
        for part in parts {
            let width = part.len() / inputs;
            joined.extend_from_slice(&part[row * width..(row + 1) * width]);
        }
    }
    joined
}

/// Symmetric per-column quantization of a row-major `[inputs, outputs]` matrix: each
/// column's largest magnitude maps to ±[`INT8_MAX`].
fn quantize_columns(weight: &[f32], outputs: usize) -> (Vec<i8>, Vec<f32>) {
    let mut largest = vec![0.0f32; outputs];
    for row in weight.chunks(outputs) {
        for (column, value) in row.iter().enumerate() {
            largest[column] = largest[column].max(value.abs());
        }
    }
    let scales: Vec<f32> = largest
        .iter()
        .map(|&magnitude| {
            if magnitude > 0.0 {
                magnitude / INT8_MAX
            } else {
                1.0
            }
        })
        .collect();
    let quantized = weight
        .chunks(outputs)
        .flat_map(|row| {
            row.iter()
                .zip(&scales)
                .map(|(value, scale)| (value / scale).round().clamp(-INT8_MAX, INT8_MAX) as i8)
        })
        .collect();
    (quantized, scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_quantized_against_their_own_largest_value() {
        // [[1.5, -0.5], [-2, 0.3]]: column 0's largest is 2, column 1's is 0.5.
        let (quantized, scales) = quantize_columns(&[1.5, -0.5, -2.0, 0.3], 2);
        assert_eq!(scales, vec![2.0 / INT8_MAX, 0.5 / INT8_MAX]);
        assert_eq!(quantized, vec![47, -63, -63, 38]);
    }

    #[test]
    fn interleaving_puts_each_part_s_columns_side_by_side() {
        let joined = interleave_columns(&[&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0]], 2);
        assert_eq!(joined, vec![1.0, 3.0, 4.0, 2.0, 5.0, 6.0]);
    }
}
