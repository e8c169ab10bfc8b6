//! The few ONNX protobuf messages a graph needs, written by hand (field numbers from
//! `onnx.proto3`): a model, its graph, nodes with integer, float and integer-list
//! attributes, tensors as raw little-endian bytes, and typed inputs and outputs. No
//! protobuf compiler and no generated code: the whole encoding is varints and
//! length-delimited fields.

/// Element types (`TensorProto.DataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementType {
    Float = 1,
    Int8 = 3,
    Int64 = 7,
}

/// A dimension of an input or output: fixed, or named (dynamic).
pub(crate) enum Dim<'a> {
    Fixed(i64),
    Named(&'a str),
}

/// A node attribute.
pub(crate) enum Attribute<'a> {
    Int(&'a str, i64),
    Float(&'a str, f32),
    Ints(&'a str, &'a [i64]),
}

const VARINT: u32 = 0;
const FIXED32: u32 = 5;
const LENGTH_DELIMITED: u32 = 2;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

fn int(out: &mut Vec<u8>, field: u32, value: i64) {
    key(out, field, VARINT);
    // Negative int64 values are ten-byte two's-complement varints.
    varint(out, value as u64);
}

fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(out, field, LENGTH_DELIMITED);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    bytes(out, field, &inner);
}

/// A graph under construction: nodes and initializers are encoded as they are added.
#[derive(Default)]
pub(crate) struct GraphWriter {
    body: Vec<u8>,
    next_name: usize,
}

impl GraphWriter {
    /// A fresh value name with a readable stem.
    pub(crate) fn name(&mut self, stem: &str) -> String {
        self.next_name += 1;
        format!("{stem}_{}", self.next_name)
    }

    /// Adds a node; `domain` is empty for the standard operators.
    pub(crate) fn node(
        &mut self,
        op_type: &str,
        domain: &str,
        inputs: &[&str],
        outputs: &[&str],
        attributes: &[Attribute<'_>],
    ) {
        let name = self.name(op_type);
        message(&mut self.body, 1, |node| {
            for input in inputs {
                bytes(node, 1, input.as_bytes());
            }
            for output in outputs {
                bytes(node, 2, output.as_bytes());
            }
            bytes(node, 3, name.as_bytes());
            bytes(node, 4, op_type.as_bytes());
            for attribute in attributes {
                message(node, 5, |encoded| attribute.encode(encoded));
            }
            if !domain.is_empty() {
                bytes(node, 7, domain.as_bytes());
            }
        });
    }

    /// Adds a constant tensor (an initializer) of raw little-endian bytes.
    pub(crate) fn initializer(
        &mut self,
        name: &str,
        element_type: ElementType,
        dims: &[i64],
        raw: &[u8],
    ) {
        message(&mut self.body, 5, |tensor| {
            for &dim in dims {
                int(tensor, 1, dim);
            }
            int(tensor, 2, element_type as i64);
            bytes(tensor, 8, name.as_bytes());
            bytes(tensor, 9, raw);
        });
    }

    pub(crate) fn floats(&mut self, name: &str, dims: &[i64], values: &[f32]) {
        let raw: Vec<u8> = values
            .iter()
            .flat_map(|value| value.to_le_bytes())
            .collect();
        self.initializer(name, ElementType::Float, dims, &raw);
    }

    pub(crate) fn int8s(&mut self, name: &str, dims: &[i64], values: &[i8]) {
        let raw: Vec<u8> = values.iter().map(|&value| value as u8).collect();
        self.initializer(name, ElementType::Int8, dims, &raw);
    }

    pub(crate) fn int64s(&mut self, name: &str, dims: &[i64], values: &[i64]) {
        let raw: Vec<u8> = values
            .iter()
            .flat_map(|value| value.to_le_bytes())
            .collect();
        self.initializer(name, ElementType::Int64, dims, &raw);
    }

    /// Declares a graph input (field 11) or output (field 12).
    fn value_info(&mut self, field: u32, name: &str, element_type: ElementType, dims: &[Dim<'_>]) {
        message(&mut self.body, field, |info| {
            bytes(info, 1, name.as_bytes());
            message(info, 2, |type_proto| {
                message(type_proto, 1, |tensor_type| {
                    int(tensor_type, 1, element_type as i64);
                    message(tensor_type, 2, |shape| {
                        for dim in dims {
                            message(shape, 1, |encoded| match dim {
                                Dim::Fixed(value) => int(encoded, 1, *value),
                                Dim::Named(param) => bytes(encoded, 2, param.as_bytes()),
                            });
                        }
                    });
                });
            });
        });
    }

    pub(crate) fn input(&mut self, name: &str, element_type: ElementType, dims: &[Dim<'_>]) {
        self.value_info(11, name, element_type, dims);
    }

    pub(crate) fn output(&mut self, name: &str, element_type: ElementType, dims: &[Dim<'_>]) {
        self.value_info(12, name, element_type, dims);
    }

    /// The finished model: IR version 8, the standard opset 17 and Microsoft's contrib
    /// opset 1.
    pub(crate) fn into_model(self, graph_name: &str, producer: &str) -> Vec<u8> {
        let mut model = Vec::with_capacity(self.body.len() + 256);
        int(&mut model, 1, 8);
        bytes(&mut model, 2, producer.as_bytes());
        message(&mut model, 7, |graph| {
            graph.extend_from_slice(&self.body);
            bytes(graph, 2, graph_name.as_bytes());
        });
        for (domain, version) in [("", 17), ("com.microsoft", 1)] {
            message(&mut model, 8, |opset| {
                bytes(opset, 1, domain.as_bytes());
                int(opset, 2, version);
            });
        }
        model
    }
}

impl Attribute<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        // AttributeProto: name = 1, f = 2, i = 3, ints = 8, type = 20.
        match self {
            Attribute::Int(name, value) => {
                bytes(out, 1, name.as_bytes());
                int(out, 3, *value);
                int(out, 20, 2);
            }
            Attribute::Float(name, value) => {
                bytes(out, 1, name.as_bytes());
                key(out, 2, FIXED32);
                out.extend_from_slice(&value.to_le_bytes());
                int(out, 20, 1);
            }
            Attribute::Ints(name, values) => {
                bytes(out, 1, name.as_bytes());
                for &value in values.iter() {
                    int(out, 8, value);
                }
                int(out, 20, 7);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_follow_the_protobuf_encoding() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        int(&mut out, 1, -1);
        assert_eq!(
            out.len(),
            11,
            "a negative int64 is a ten-byte varint after its key"
        );
    }

    #[test]
    fn a_node_is_a_length_delimited_message_with_its_fields_in_order() {
        let mut graph = GraphWriter::default();
        graph.node("Relu", "", &["x"], &["y"], &[]);
        // field 1 (node), length, then input "x", output "y", the name, "Relu".
        assert_eq!(graph.body[0], 0x0a);
        let length = graph.body[1] as usize;
        assert_eq!(graph.body.len(), 2 + length);
        assert_eq!(&graph.body[2..5], &[0x0a, 1, b'x']);
        assert_eq!(&graph.body[5..8], &[0x12, 1, b'y']);
        assert!(graph.body.ends_with(b"Relu"));
    }
}
