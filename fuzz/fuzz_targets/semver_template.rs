//! The `olm.semver` template: a YAML or JSON text read as `catalog template` reads it (the
//! first document), parsed strictly, and — when every image it names is one of the bundles
//! below, so nothing is pulled — rendered into a catalog, which must then write as JSON and
//! load back to itself.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bundle_tool_fuzz::semver_template(data));
