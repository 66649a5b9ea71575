//! Why a reconcile failed: one enum for the controller and the replication step it runs,
//! kept apart from both (as controller-rs keeps its `Error`) so that neither imports the
//! other for it.

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("{action}: {source}")]
    Kube {
        /// What was being done.
        action: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The finalizer machinery failed (adding or removing the finalizer, or an object
    /// without a name or namespace): kube-runtime's own error, boxed since it can hold a
    /// reconcile's error in turn.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    /// A Secret the cluster needs is missing or unusable.
    #[error("{0}")]
    Secret(String),
}

impl Error {
    /// A short label for metrics (`errors by reason`).
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Kube {
                source: kube::Error::Api(status),
                ..
            } if status.code == 403 => "Forbidden",
            Error::Kube {
                source: kube::Error::Api(status),
                ..
            } if status.code == 409 => "Conflict",
            Error::Kube {
                source: kube::Error::Api(_),
                ..
            } => "ApiError",
            Error::Kube { .. } => "ClientError",
            Error::Finalizer(_) => "Finalizer",
            Error::Secret(_) => "Secret",
        }
    }
}

/// Wraps an API error with what was being done.
pub(crate) fn kube_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Kube { action, source }
}
