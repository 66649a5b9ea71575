//! The fast JSON catalog paths against the generic one on a JSON stream: the one-pass reader
//! and the probing reader each either decline (adding nothing) or give exactly what the
//! generic loader (`Value`s, then by schema) gives; a stream the generic loader refuses must
//! be declined by both.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::json_differential(data));
