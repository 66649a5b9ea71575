//! operator-framework/api's CSV type as `encoding/json` sees it: each struct's JSON field
//! names (sorted, the order Go meets them in sigs.k8s.io/yaml's output) and the Go type names
//! its error messages print.

use super::go::{Go, OBJECT_META, STR, STRING_MAP, STRINGS};

const APP_LINK: Go = Go::Struct("v1alpha1.AppLink", &[("name", STR), ("url", STR)]);
const MAINTAINER: Go = Go::Struct("v1alpha1.Maintainer", &[("email", STR), ("name", STR)]);
const ICON: Go = Go::Struct("v1alpha1.Icon", &[("base64data", STR), ("mediatype", STR)]);
const INSTALL_MODE: Go = Go::Struct(
    "v1alpha1.InstallMode",
    &[
        ("supported", Go::Bool),
        ("type", Go::Str("v1alpha1.InstallModeType")),
    ],
);
const RELATED_IMAGE: Go = Go::Struct("v1alpha1.RelatedImage", &[("image", STR), ("name", STR)]);
const GVK: Go = Go::Struct(
    "v1.GroupVersionKind",
    &[("group", STR), ("kind", STR), ("version", STR)],
);
const SELECTOR_REQUIREMENT: Go = Go::Struct(
    "v1.LabelSelectorRequirement",
    &[
        ("key", STR),
        ("operator", Go::Str("v1.LabelSelectorOperator")),
        ("values", STRINGS),
    ],
);
const LABEL_SELECTOR: Go = Go::Struct(
    "v1.LabelSelector",
    &[
        ("matchExpressions", Go::Slice(&SELECTOR_REQUIREMENT)),
        ("matchLabels", STRING_MAP),
    ],
);
const RESOURCE_REF: Go = Go::Struct(
    "v1alpha1.APIResourceReference",
    &[("kind", STR), ("name", STR), ("version", STR)],
);
const fn descriptor(name: &'static str) -> Go {
    Go::Struct(
        name,
        &[
            ("description", STR),
            ("displayName", STR),
            ("path", STR),
            ("value", Go::Any),
            ("x-descriptors", STRINGS),
        ],
    )
}
const SPEC_DESCRIPTOR: Go = descriptor("v1alpha1.SpecDescriptor");
const STATUS_DESCRIPTOR: Go = descriptor("v1alpha1.StatusDescriptor");
const ACTION_DESCRIPTOR: Go = descriptor("v1alpha1.ActionDescriptor");
const CRD_DESCRIPTION: Go = Go::Struct(
    "v1alpha1.CRDDescription",
    &[
        ("actionDescriptors", Go::Slice(&ACTION_DESCRIPTOR)),
        ("description", STR),
        ("displayName", STR),
        ("kind", STR),
        ("name", STR),
        ("resources", Go::Slice(&RESOURCE_REF)),
        ("specDescriptors", Go::Slice(&SPEC_DESCRIPTOR)),
        ("statusDescriptors", Go::Slice(&STATUS_DESCRIPTOR)),
        ("version", STR),
    ],
);
const API_SERVICE_DESCRIPTION: Go = Go::Struct(
    "v1alpha1.APIServiceDescription",
    &[
        ("actionDescriptors", Go::Slice(&ACTION_DESCRIPTOR)),
        ("containerPort", Go::Int32),
        ("deploymentName", STR),
        ("description", STR),
        ("displayName", STR),
        ("group", STR),
        ("kind", STR),
        ("name", STR),
        ("resources", Go::Slice(&RESOURCE_REF)),
        ("specDescriptors", Go::Slice(&SPEC_DESCRIPTOR)),
        ("statusDescriptors", Go::Slice(&STATUS_DESCRIPTOR)),
        ("version", STR),
    ],
);
const WEBHOOK: Go = Go::Struct(
    "v1alpha1.WebhookDescription",
    &[
        ("admissionReviewVersions", STRINGS),
        ("containerPort", Go::Int32),
        ("conversionCRDs", STRINGS),
        ("deploymentName", STR),
        ("failurePolicy", Go::Str("v1.FailurePolicyType")),
        ("generateName", STR),
        ("matchPolicy", Go::Str("v1.MatchPolicyType")),
        ("objectSelector", LABEL_SELECTOR),
        ("reinvocationPolicy", Go::Str("v1.ReinvocationPolicyType")),
        ("sideEffects", Go::Str("v1.SideEffectClass")),
        ("timeoutSeconds", Go::Int32),
        ("type", Go::Str("v1alpha1.WebhookAdmissionType")),
        ("webhookPath", STR),
    ],
);
const POLICY_RULE: Go = Go::Struct(
    "v1.PolicyRule",
    &[
        ("apiGroups", STRINGS),
        ("nonResourceURLs", STRINGS),
        ("resourceNames", STRINGS),
        ("resources", STRINGS),
        ("verbs", STRINGS),
    ],
);
const PERMISSIONS: Go = Go::Struct(
    "v1alpha1.StrategyDeploymentPermissions",
    &[
        ("rules", Go::Slice(&POLICY_RULE)),
        ("serviceAccountName", STR),
    ],
);
const DEPLOYMENT: Go = Go::Struct(
    "v1alpha1.StrategyDeploymentSpec",
    &[
        ("label", Go::Map("labels.Set", &STR)),
        ("name", STR),
        ("spec", Go::Any),
    ],
);
const INSTALL: Go = Go::Struct(
    "v1alpha1.NamedInstallStrategy",
    &[
        (
            "spec",
            Go::Struct(
                "v1alpha1.StrategyDetailsDeployment",
                &[
                    ("clusterPermissions", Go::Slice(&PERMISSIONS)),
                    ("deployments", Go::Slice(&DEPLOYMENT)),
                    ("permissions", Go::Slice(&PERMISSIONS)),
                ],
            ),
        ),
        ("strategy", STR),
    ],
);
const SPEC: Go = Go::Struct(
    "v1alpha1.ClusterServiceVersionSpec",
    &[
        ("annotations", STRING_MAP),
        (
            "apiservicedefinitions",
            Go::Struct(
                "v1alpha1.APIServiceDefinitions",
                &[
                    ("owned", Go::Slice(&API_SERVICE_DESCRIPTION)),
                    ("required", Go::Slice(&API_SERVICE_DESCRIPTION)),
                ],
            ),
        ),
        (
            "cleanup",
            Go::Struct("v1alpha1.CleanupSpec", &[("enabled", Go::Bool)]),
        ),
        (
            "customresourcedefinitions",
            Go::Struct(
                "v1alpha1.CustomResourceDefinitions",
                &[
                    ("owned", Go::Slice(&CRD_DESCRIPTION)),
                    ("required", Go::Slice(&CRD_DESCRIPTION)),
                ],
            ),
        ),
        ("description", STR),
        ("displayName", STR),
        ("icon", Go::Slice(&ICON)),
        ("install", INSTALL),
        ("installModes", Go::Slice(&INSTALL_MODE)),
        ("keywords", STRINGS),
        ("labels", STRING_MAP),
        ("links", Go::Slice(&APP_LINK)),
        ("maintainers", Go::Slice(&MAINTAINER)),
        ("maturity", STR),
        ("minKubeVersion", STR),
        ("nativeAPIs", Go::Slice(&GVK)),
        ("provider", APP_LINK),
        ("relatedImages", Go::Slice(&RELATED_IMAGE)),
        ("replaces", STR),
        ("selector", LABEL_SELECTOR),
        ("skips", STRINGS),
        ("version", Go::Version),
        ("webhookdefinitions", Go::Slice(&WEBHOOK)),
    ],
);
/// `v1alpha1.ClusterServiceVersion`; `status` is not checked.
pub const CSV: Go = Go::Struct(
    "v1alpha1.ClusterServiceVersion",
    &[
        ("apiVersion", STR),
        ("kind", STR),
        ("metadata", OBJECT_META),
        ("spec", SPEC),
    ],
);
