//! The fast YAML→JSON transcoder (`manifest::yaml`) against serde-saphyr
//! (`manifest::read_stream_generic`): when the transcoder takes a text, serde-saphyr must
//! read it too and give the same documents; when serde-saphyr refuses it, the transcoder must
//! have declined. `manifest::read_stream` (fast path first) must equal the generic reader,
//! errors included.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::yaml_differential(data));
