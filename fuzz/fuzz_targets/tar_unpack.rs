//! Unpacking an image's layers (`image::unpack_layers`): the input is a tar (gzipped here, as
//! a layer is) or already a gzip stream, unpacked as both layers of an image so that its
//! whiteouts meet what its first copy wrote. Whatever it holds, nothing may be written outside
//! the target folder, nothing but folders and regular files may be made, the files written
//! must be the ones reported, and the unpacked total may not pass the library's 64 MiB limit.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::tar_unpack(data));
