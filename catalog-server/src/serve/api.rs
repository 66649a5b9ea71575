//! The registry API's generated types, client and server (package `api`).
#![allow(missing_docs, clippy::doc_markdown, clippy::all)]

tonic::include_proto!("api");

/// The encoded descriptor set of `registry.proto`, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/registry_descriptor.bin"));
