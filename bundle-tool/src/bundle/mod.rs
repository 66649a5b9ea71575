//! The registry+v1 bundle: its layout (`manifests/`, `metadata/annotations.yaml`,
//! `bundle.Dockerfile`), generating one from an operator's manifests, and writing it
//! atomically.

pub mod annotations;
pub mod config;
pub mod generate;
pub mod init;
pub mod inputs;
pub mod pin;
pub mod read;
pub mod write;

pub use annotations::BundleAnnotations;
pub use config::GenerateConfig;
pub use generate::{GeneratedBundle, Warning, generate};
pub use inputs::{BundleInputs, InputsError};
