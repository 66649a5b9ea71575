//! Compiles the registry API (`proto/registry.proto`) into Rust with protox (a pure-Rust
//! protobuf compiler, so no system `protoc` is needed) and tonic.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/registry.proto");
    let descriptors = protox::compile(["proto/registry.proto"], ["proto"])?;
    // gRPC reflection serves this set, so clients such as grpcurl see the same API as opm's.
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("registry_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors.clone())?;
    // The server again, answering with `Bundle`s encoded once (src/serve/encoded.rs); every
    // other message is the type generated above.
    let encoded_dir = out_dir.join("encoded");
    std::fs::create_dir_all(&encoded_dir)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .out_dir(&encoded_dir)
        .extern_path(".api.Bundle", "crate::serve::encoded::EncodedBundle")
        .extern_path(".api", "crate::serve::api")
        .compile_fds(descriptors)?;
    Ok(())
}
