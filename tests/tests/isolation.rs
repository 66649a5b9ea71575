//! Test binaries run in a network namespace that has only loopback.

#[test]
fn test_binaries_run_with_only_loopback() -> anyhow::Result<()> {
    e2e::require_isolated_network()
}
