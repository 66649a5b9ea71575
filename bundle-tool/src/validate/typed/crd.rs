//! The apiextensions v1 and v1beta1 CRD types as `encoding/json` sees them, outside the
//! schema (`openAPIV3Schema` has its own decoders and is not checked) and `status`.

use super::go::{Go, OBJECT_META, STR, STRINGS};

const NAMES_V1: Go = Go::Struct(
    "v1.CustomResourceDefinitionNames",
    &[
        ("categories", STRINGS),
        ("kind", STR),
        ("listKind", STR),
        ("plural", STR),
        ("shortNames", STRINGS),
        ("singular", STR),
    ],
);

const COLUMN_V1: Go = Go::Struct(
    "v1.CustomResourceColumnDefinition",
    &[
        ("description", STR),
        ("format", STR),
        ("jsonPath", STR),
        ("name", STR),
        ("priority", Go::Int32),
        ("type", STR),
    ],
);

const SCALE_V1: Go = Go::Struct(
    "v1.CustomResourceSubresourceScale",
    &[
        ("labelSelectorPath", STR),
        ("specReplicasPath", STR),
        ("statusReplicasPath", STR),
    ],
);

const STATUS_V1: Go = Go::Struct("v1.CustomResourceSubresourceStatus", &[]);

const SUBRESOURCES_V1: Go = Go::Struct(
    "v1.CustomResourceSubresources",
    &[("scale", SCALE_V1), ("status", STATUS_V1)],
);

const VALIDATION_V1: Go = Go::Struct(
    "v1.CustomResourceValidation",
    &[("openAPIV3Schema", Go::Any)],
);

const SELECTABLE_V1: Go = Go::Struct("v1.SelectableField", &[("jsonPath", STR)]);

const SERVICE_V1: Go = Go::Struct(
    "v1.ServiceReference",
    &[
        ("name", STR),
        ("namespace", STR),
        ("path", STR),
        ("port", Go::Int32),
    ],
);

const CLIENT_CONFIG_V1: Go = Go::Struct(
    "v1.WebhookClientConfig",
    &[("caBundle", Go::Any), ("service", SERVICE_V1), ("url", STR)],
);

const VERSION_V1: Go = Go::Struct(
    "v1.CustomResourceDefinitionVersion",
    &[
        ("additionalPrinterColumns", Go::Slice(&COLUMN_V1)),
        ("deprecated", Go::Bool),
        ("deprecationWarning", STR),
        ("name", STR),
        ("schema", VALIDATION_V1),
        ("selectableFields", Go::Slice(&SELECTABLE_V1)),
        ("served", Go::Bool),
        ("storage", Go::Bool),
        ("subresources", SUBRESOURCES_V1),
    ],
);

const WEBHOOK_V1: Go = Go::Struct(
    "v1.WebhookConversion",
    &[
        ("clientConfig", CLIENT_CONFIG_V1),
        ("conversionReviewVersions", STRINGS),
    ],
);

const CONVERSION_V1: Go = Go::Struct(
    "v1.CustomResourceConversion",
    &[
        ("strategy", Go::Str("v1.ConversionStrategyType")),
        ("webhook", WEBHOOK_V1),
    ],
);

const SPEC_V1: Go = Go::Struct(
    "v1.CustomResourceDefinitionSpec",
    &[
        ("conversion", CONVERSION_V1),
        ("group", STR),
        ("names", NAMES_V1),
        ("preserveUnknownFields", Go::Bool),
        ("scope", Go::Str("v1.ResourceScope")),
        ("versions", Go::Slice(&VERSION_V1)),
    ],
);

/// `v1.CustomResourceDefinition`.
pub const CRD_V1: Go = Go::Struct(
    "v1.CustomResourceDefinition",
    &[
        ("apiVersion", STR),
        ("kind", STR),
        ("metadata", OBJECT_META),
        ("spec", SPEC_V1),
    ],
);

const NAMES_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceDefinitionNames",
    &[
        ("categories", STRINGS),
        ("kind", STR),
        ("listKind", STR),
        ("plural", STR),
        ("shortNames", STRINGS),
        ("singular", STR),
    ],
);

const COLUMN_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceColumnDefinition",
    &[
        ("JSONPath", STR),
        ("description", STR),
        ("format", STR),
        ("name", STR),
        ("priority", Go::Int32),
        ("type", STR),
    ],
);

const SCALE_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceSubresourceScale",
    &[
        ("labelSelectorPath", STR),
        ("specReplicasPath", STR),
        ("statusReplicasPath", STR),
    ],
);

const STATUS_V1B1: Go = Go::Struct("v1beta1.CustomResourceSubresourceStatus", &[]);

const SUBRESOURCES_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceSubresources",
    &[("scale", SCALE_V1B1), ("status", STATUS_V1B1)],
);

const VALIDATION_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceValidation",
    &[("openAPIV3Schema", Go::Any)],
);

const SELECTABLE_V1B1: Go = Go::Struct("v1beta1.SelectableField", &[("jsonPath", STR)]);

const SERVICE_V1B1: Go = Go::Struct(
    "v1beta1.ServiceReference",
    &[
        ("name", STR),
        ("namespace", STR),
        ("path", STR),
        ("port", Go::Int32),
    ],
);

const CLIENT_CONFIG_V1B1: Go = Go::Struct(
    "v1beta1.WebhookClientConfig",
    &[
        ("caBundle", Go::Any),
        ("service", SERVICE_V1B1),
        ("url", STR),
    ],
);

const VERSION_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceDefinitionVersion",
    &[
        ("additionalPrinterColumns", Go::Slice(&COLUMN_V1B1)),
        ("deprecated", Go::Bool),
        ("deprecationWarning", STR),
        ("name", STR),
        ("schema", VALIDATION_V1B1),
        ("selectableFields", Go::Slice(&SELECTABLE_V1B1)),
        ("served", Go::Bool),
        ("storage", Go::Bool),
        ("subresources", SUBRESOURCES_V1B1),
    ],
);

const CONVERSION_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceConversion",
    &[
        ("conversionReviewVersions", STRINGS),
        ("strategy", Go::Str("v1beta1.ConversionStrategyType")),
        ("webhookClientConfig", CLIENT_CONFIG_V1B1),
    ],
);

const SPEC_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceDefinitionSpec",
    &[
        ("additionalPrinterColumns", Go::Slice(&COLUMN_V1B1)),
        ("conversion", CONVERSION_V1B1),
        ("group", STR),
        ("names", NAMES_V1B1),
        ("preserveUnknownFields", Go::Bool),
        ("scope", Go::Str("v1beta1.ResourceScope")),
        ("selectableFields", Go::Slice(&SELECTABLE_V1B1)),
        ("subresources", SUBRESOURCES_V1B1),
        ("validation", VALIDATION_V1B1),
        ("version", STR),
        ("versions", Go::Slice(&VERSION_V1B1)),
    ],
);

/// `v1beta1.CustomResourceDefinition`.
pub const CRD_V1B1: Go = Go::Struct(
    "v1beta1.CustomResourceDefinition",
    &[
        ("apiVersion", STR),
        ("kind", STR),
        ("metadata", OBJECT_META),
        ("spec", SPEC_V1B1),
    ],
);
