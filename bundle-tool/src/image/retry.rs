//! Retrying a registry exchange that failed transiently (5xx, a dropped connection): 200 ms,
//! doubling up to 5 s, `attempts` tries in all. Both push paths (oci-client's and our
//! plain-HTTP session) and pulls use this one loop, so they back off alike.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// Runs `operation` until it succeeds, fails for good (`transient` says no), or has been
/// tried `attempts` times; the last error is reported as `what: error`.
pub async fn with_backoff<T, E, F, Fut>(
    attempts: u32,
    what: &str,
    transient: impl Fn(&E) -> bool,
    mut operation: F,
) -> anyhow::Result<T>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut delay = Duration::from_millis(200);
    let mut attempt = 1;
    loop {
        match operation().await {
            Ok(value) => return Ok(value),
            Err(error) if attempt < attempts && transient(&error) => {
                tracing::debug!(%error, attempt, "{what}: retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
                attempt += 1;
            }
            Err(error) => anyhow::bail!("{what}: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_backoff;

    #[tokio::test]
    async fn retries_transient_failures_only() {
        let mut calls = 0;
        let result: anyhow::Result<u32> = with_backoff(
            3,
            "trying",
            |e: &&str| *e == "again",
            || {
                calls += 1;
                let answer = if calls < 3 { Err("again") } else { Ok(calls) };
                async move { answer }
            },
        )
        .await;
        assert_eq!(result.expect("third try"), 3);
        let result: anyhow::Result<()> = with_backoff(
            3,
            "trying",
            |e: &&str| *e == "again",
            || async { Err("no") },
        )
        .await;
        assert_eq!(result.expect_err("permanent").to_string(), "trying: no");
    }
}
