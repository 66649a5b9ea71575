//! Image references: our grammar checker (`image_ref::check`) and splitter
//! (`image::parse_reference`) against oci-client's regex-based parser, which they replace.
//! Every reference we accept, oci-client must accept with the same registry, repository,
//! tag and digest.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::image_ref(data));
