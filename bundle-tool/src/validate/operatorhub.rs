//! The `operatorhubv2` validator's CSV checks: provider, maintainers, links, version and
//! icon, with upstream's messages.

use serde_json::Value;

use super::Finding;
use crate::manifest::text;

/// The OperatorHub checks of the CSV (operator-framework/api's operatorhubv2 validator).
pub fn findings(csv: &Value, name: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut error = |detail: String| out.push(Finding::error("", format!("({name}) {detail}")));
    let spec = &csv["spec"];
    if text(spec, "/provider/name").trim().is_empty() {
        error("csv.Spec.Provider.Name not specified".into());
    }
    for maintainer in spec["maintainers"].as_array().into_iter().flatten() {
        let (maintainer_name, email) = (text(maintainer, "/name"), text(maintainer, "/email"));
        if maintainer_name.is_empty() || email.is_empty() {
            error("csv.Spec.Maintainers elements should contain both name and email".into());
        }
        if !email.is_empty() && !email_is_valid(email) {
            error(format!(
                "csv.Spec.Maintainers email {email} is invalid: mail: missing '@' or angle-addr"
            ));
        }
    }
    for link in spec["links"].as_array().into_iter().flatten() {
        let (link_name, url) = (text(link, "/name"), text(link, "/url"));
        if link_name.is_empty() || url.is_empty() {
            error("csv.Spec.Links elements should contain both name and url".into());
        }
        if !(url.is_empty() || url.contains("://") || url.starts_with('/')) {
            error(format!(
                "csv.Spec.Links url {url} is invalid: parse {url:?}: invalid URI for request"
            ));
        }
    }
    let version = text(spec, "/version");
    // Unset reads as 0.0.0; a value that does not parse is reported by the version check.
    let unset = match crate::version_range::parse_version_tolerant(version) {
        Ok(parsed) => parsed == semver::Version::new(0, 0, 0),
        Err(_) => version.is_empty(),
    };
    if unset {
        error("csv.Spec.Version must be set".into());
    }
    match spec.get("icon").and_then(Value::as_array) {
        Some(icons) => {
            if icons.len() != 1 {
                error("csv.Spec.Icon should only have one element".into());
            }
            if let Some(icon) = icons.first() {
                let (data, media_type) = (text(icon, "/base64data"), text(icon, "/mediatype"));
                if data.is_empty() || media_type.is_empty() {
                    error("csv.Spec.Icon elements should contain both data and mediatype".into());
                }
                if !media_type.is_empty()
                    && !["image/gif", "image/jpeg", "image/png", "image/svg+xml"]
                        .contains(&media_type)
                {
                    error(format!(
                        "csv.Spec.Icon {media_type} does not have a valid mediatype"
                    ));
                }
            }
        }
        None => out.push(Finding::warning(
            "",
            format!("({name}) csv.Spec.Icon not specified"),
        )),
    }
    // The minKubeVersion warning and error are also upstream's CSV validator's: reported once,
    // by the CSV checks.
    out
}

/// An RFC 5322 address as Go's `mail.ParseAddress` accepts it, in the common forms:
/// `local@domain` or `Display Name <local@domain>`.
fn email_is_valid(text: &str) -> bool {
    let address = match (text.find('<'), text.rfind('>')) {
        (Some(open), Some(close)) if open < close => &text[open + 1..close],
        _ => text.trim(),
    };
    match address.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !domain.is_empty() && !address.contains(char::is_whitespace)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(csv: Value) -> Vec<String> {
        findings(&csv, "x.v1.0.0")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn operatorhub_checks_name_each_problem() {
        let found = messages(json!({"spec": {
            "version": "1.0.0",
            "minKubeVersion": "1.25.0",
            "maintainers": [{"name": "a"}, {"name": "b", "email": "not-an-address"}],
            "links": [{"name": "docs", "url": "example.com"}],
            "icon": [{"base64data": "AA==", "mediatype": "image/bmp"}]
        }}));
        let expect = [
            "Error: Value : (x.v1.0.0) csv.Spec.Provider.Name not specified",
            "Error: Value : (x.v1.0.0) csv.Spec.Maintainers elements should contain both name and email",
            "csv.Spec.Maintainers email not-an-address is invalid",
            "csv.Spec.Links url example.com is invalid",
            "Error: Value : (x.v1.0.0) csv.Spec.Icon image/bmp does not have a valid mediatype",
        ];
        for e in expect {
            assert!(
                found.iter().any(|f| f.contains(e)),
                "{e:?} not in {found:#?}"
            );
        }
    }

    #[test]
    fn a_complete_csv_has_no_operatorhub_errors() {
        let found = messages(json!({"spec": {
            "version": "1.0.0",
            "minKubeVersion": "1.25.0",
            "provider": {"name": "Example"},
            "maintainers": [{"name": "a", "email": "Team A <a@example.com>"}],
            "links": [{"name": "docs", "url": "https://example.com/docs"}],
            "icon": [{"base64data": "AA==", "mediatype": "image/png"}]
        }}));
        assert!(found.is_empty(), "{found:#?}");
        let unset = messages(
            json!({"spec": {"provider": {"name": "p"}, "minKubeVersion": "1.25.0", "icon": [{"base64data": "A", "mediatype": "image/png"}]}}),
        );
        assert_eq!(
            unset,
            vec!["Error: Value : (x.v1.0.0) csv.Spec.Version must be set".to_string()]
        );
    }
}
