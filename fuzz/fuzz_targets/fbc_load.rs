//! The FBC loader on one file, JSON stream or YAML documents: `load_str` (the fast paths
//! first: typed JSON readers, the YAML transcoder) must give what the generic loader
//! (serde_json / serde-saphyr into `Value`s, then by schema) gives, error for error; a loaded
//! catalog must write as JSON and YAML without panicking, and the JSON must load back to it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::fbc_load(data));
