//! An error printed with its causes, one line: the message, then each cause after `: `
//! (anyhow's `{:#}`, which the tool printed before its errors were typed). Used where an
//! `std::io::Error` is shown whole: the command's error and a release step's.

/// `error` and each of its causes after `: `.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}
