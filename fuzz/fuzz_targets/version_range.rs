//! `olm.skipRange` (blang/semver ranges) and version parsing. The input is a range, a
//! newline, and a version. Besides never panicking: a strictly parsed version prints and
//! parses back to itself, reads the same leniently, and `>=V` contains it while `<V` does
//! not.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::version_range(data));
