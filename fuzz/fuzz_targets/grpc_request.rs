//! Decoding registry gRPC requests as the server does: the 5-byte length-prefixed frame
//! (`serve::direct_bundle::message_of_frame`), then the message as every request type of
//! `api.Registry` (prost). Both the framed input and the bare input are decoded. A message
//! that decodes re-encodes to one that decodes to the same request; `EncodedBundle` (only ever
//! sent) keeps nothing it decodes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::grpc_request(data));
