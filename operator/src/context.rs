//! What every reconcile shares: the client, the metrics, the Event recorder and the
//! per-cluster memory of failures and unanswering primaries. Apart from the controller, so
//! that the replication step it calls takes it without importing the controller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;

use crate::api::v1::RedisCluster;
use crate::metrics::Metrics;

/// What every reconcile shares.
pub struct Context {
    /// The API client.
    pub client: kube::Client,
    /// Metrics the operator exports.
    pub metrics: Arc<Metrics>,
    /// Talk to Redis (failover, repointing). Off, ordinal 0 is the primary and only the
    /// labels are kept: for clusters whose pod network the operator cannot reach, and for
    /// kwok, whose pods run nothing.
    pub manage_replication: bool,
    pub(crate) recorder: Recorder,
    pub(crate) failures: Mutex<HashMap<ObjectRef<RedisCluster>, u32>>,
    /// Since when each cluster's primary has not answered.
    pub(crate) primary_down_since: Mutex<HashMap<ObjectRef<RedisCluster>, Instant>>,
}

impl Context {
    /// A context for `client`, publishing Events as `reporter`.
    pub fn new(client: kube::Client, metrics: Arc<Metrics>, reporter: &str) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "redis-operator".into(),
                instance: Some(reporter.into()),
            },
        );
        Context {
            client,
            metrics,
            manage_replication: true,
            recorder,
            failures: Mutex::new(HashMap::new()),
            primary_down_since: Mutex::new(HashMap::new()),
        }
    }
}
