//! The manifest reader and the CSV/CRD decoders of the bundle loader: a stream of Kubernetes
//! objects read with file lines (the fast YAML path first must equal serde-saphyr's reading),
//! each document viewed as an object, and every CSV or CRD decoded into operator-framework's
//! Go types, with the line of the failing field looked up in the text. Bad input is an
//! error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::manifest_csv(data));
