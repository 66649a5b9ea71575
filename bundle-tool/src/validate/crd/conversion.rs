//! `spec.conversion`: the strategy, and for webhooks the client config (exactly one of URL
//! and service, each well formed) and the ConversionReview versions the API server can send.

use serde_json::Value;

use super::super::Finding;
use super::rules::{dns1035_problems, enum_string, error, forbidden, invalid, required};
use super::view::Crd;

const AT: &str = "spec.conversion";

/// The checks of the CRD's conversion settings.
pub fn findings(crd: &Crd, out: &mut Vec<Finding>) {
    let Some(conversion) = &crd.conversion else {
        return;
    };
    if conversion.strategy != "None" && crd.preserve_unknown_fields {
        out.push(invalid(
            &format!("{AT}.strategy"),
            conversion.strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    let strategy_field = format!("{AT}.strategy");
    out.extend(enum_string(
        &strategy_field,
        conversion.strategy,
        &["None", "Webhook"],
    ));
    let client_field = format!("{AT}.webhookClientConfig");
    let reviews_field = format!("{AT}.conversionReviewVersions");
    if conversion.strategy != "Webhook" {
        let why = "should not be set when strategy is not set to Webhook";
        if conversion.client_config.is_some() {
            out.push(forbidden(&client_field, why));
        }
        if !conversion.review_versions.is_empty() {
            out.push(forbidden(&reviews_field, why));
        }
        return;
    }
    match conversion.client_config {
        None => out.push(required(
            &client_field,
            "required when strategy is set to Webhook",
        )),
        Some(config) => client_config(config, &client_field, out),
    }
    review_versions(&conversion.review_versions, &reviews_field, out);
}

fn client_config(config: &Value, at: &str, out: &mut Vec<Finding>) {
    let url = config["url"].as_str();
    let service = &config["service"];
    match (url, service.is_null()) {
        (Some(_), false) | (None, true) => {
            out.push(required(at, "exactly one of url or service is required"))
        }
        (Some(url), true) => webhook_url(url, &format!("{at}.url"), out),
        (None, false) => webhook_service(service, &format!("{at}.service"), out),
    }
}

/// apiserver's `ValidateWebhookURL` with https required, on a URL split the way Go's
/// `url.Parse` splits one (scheme, `//` authority with user info, query, fragment).
fn webhook_url(url: &str, at: &str, out: &mut Vec<Finding>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((s, r))
            if s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (s.to_ascii_lowercase(), r)
        }
        _ => (String::new(), rest),
    };
    let authority = rest
        .strip_prefix("//")
        .map(|r| r.split('/').next().unwrap_or(""))
        .unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme != "https" {
        let why = format!("'https' is the only allowed URL scheme{FORM}");
        out.push(invalid(at, &scheme, &why));
    }
    if host.is_empty() {
        out.push(invalid(at, "", &format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        out.push(invalid(
            at,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        out.push(invalid(
            at,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        out.push(invalid(
            at,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// apiserver's `ValidateWebhookService` (the port defaults to 443).
fn webhook_service(service: &Value, at: &str, out: &mut Vec<Finding>) {
    if service["name"].as_str().unwrap_or("").is_empty() {
        out.push(required(&format!("{at}.name"), "service name is required"));
    }
    if service["namespace"].as_str().unwrap_or("").is_empty() {
        out.push(required(
            &format!("{at}.namespace"),
            "service namespace is required",
        ));
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        let field = format!("{at}.port");
        out.push(error(
            &field,
            &port.to_string(),
            format!(
                "Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive"
            ),
        ));
    }
    let Some(path) = service["path"].as_str() else {
        return;
    };
    if path == "/" || path.is_empty() {
        return;
    }
    let field = format!("{at}.path");
    if path == "//" {
        out.push(invalid(&field, path, "segment[0] may not be empty"));
        return;
    }
    if !path.starts_with('/') {
        out.push(invalid(&field, path, "must start with a '/'"));
    }
    let inner = &path[path.chars().next().map_or(0, char::len_utf8)..];
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    for (i, step) in inner.split('/').enumerate() {
        if step.is_empty() {
            out.push(invalid(
                &field,
                path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for problem in super::rules::subdomain_problems(step) {
            out.push(invalid(&field, path, &format!("segment[{i}]: {problem}")));
        }
    }
}

/// apiextensions' `validateConversionReviewVersions`, with a recognised version required.
fn review_versions(versions: &[&str], at: &str, out: &mut Vec<Finding>) {
    if versions.is_empty() {
        out.push(required(at, ""));
        return;
    }
    let mut seen = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if seen.contains(version) {
            out.push(invalid(&field, version, "duplicate version"));
            continue;
        }
        seen.push(version);
        for problem in dns1035_problems(version) {
            out.push(invalid(&field, version, &problem));
        }
    }
    if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
        // Go prints the list as `%v` in the value and `%#v` in the message.
        let shown = format!("[{}]", versions.join(" "));
        let go: Vec<String> = versions.iter().map(|v| format!("{v:?}")).collect();
        out.push(error(
            at,
            &shown,
            format!(
                "Invalid value: []string{{{}}}: must include at least one of v1, v1beta1",
                go.join(", ")
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(crd: Value) -> Vec<String> {
        let mut out = Vec::new();
        findings(&Crd::new(&crd), &mut out);
        out.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_webhook_needs_a_service_or_url_and_known_review_versions() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v2", "v2"],
                "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 0, "path": "bad//P"}}}}}});
        let found = messages(crd);
        assert_eq!(found.len(), 6, "{found:#?}");
        assert_eq!(
            found[0],
            "Error: Field spec.conversion.webhookClientConfig.service.port, Value 0: spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"
        );
        assert_eq!(
            found[1],
            "Error: Field spec.conversion.webhookClientConfig.service.path, Value bad//P: spec.conversion.webhookClientConfig.service.path: Invalid value: \"bad//P\": must start with a '/'"
        );
        assert_eq!(
            found[2],
            "Error: Field spec.conversion.webhookClientConfig.service.path, Value bad//P: spec.conversion.webhookClientConfig.service.path: Invalid value: \"bad//P\": segment[1] may not be empty"
        );
        assert!(found[3].contains("segment[2]: a lowercase RFC 1123 subdomain"));
        assert_eq!(
            found[4],
            "Error: Field spec.conversion.conversionReviewVersions[1], Value v2: spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version"
        );
        assert_eq!(
            found[5],
            "Error: Field spec.conversion.conversionReviewVersions, Value [v2 v2]: spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1"
        );
    }

    #[test]
    fn strategy_none_forbids_webhook_settings() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {
            "strategy": "None", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}}}});
        assert_eq!(
            messages(crd),
            vec![
                "Error: Field spec.conversion.webhookClientConfig, Value : spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "Error: Field spec.conversion.conversionReviewVersions, Value : spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
        let missing = json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {"strategy": "Webhook"}}});
        assert_eq!(
            messages(missing),
            vec![
                "Error: Field spec.conversion.webhookClientConfig, Value : spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "Error: Field spec.conversion.conversionReviewVersions, Value : spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        let url = json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {"strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://u@h/p?q=1#f"}}}}});
        let found = messages(url);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].ends_with("Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"));
    }
}
