//! The steps of one command as they happen: recorded in its [`Report`], and shown, with
//! what each wait is at, where progress goes (a terminal).

use std::time::Instant;

use super::diagnosis::{self, Stage};
use super::report::{Progress, Report, Step};

/// The steps so far.
pub(super) struct Steps {
    pub(super) started: Instant,
    pub(super) report: Report,
    progress: Option<Progress>,
    /// The last waiting line shown, so that a wait shows only what changes.
    waiting: String,
}

impl Steps {
    pub(super) fn new(started: Instant, progress: Option<Progress>) -> Steps {
        Steps {
            started,
            report: Report::default(),
            progress,
            waiting: String::new(),
        }
    }

    /// Shows what a wait is at, when it changed.
    pub(super) fn waiting(&mut self, stage: Stage, stuck: Option<&diagnosis::Stuck>) {
        let Some(progress) = &self.progress else {
            return;
        };
        let line = waiting_line(stage, stuck);
        if line != self.waiting {
            progress(&format!(
                "{:>6.1}s {line}",
                self.started.elapsed().as_secs_f64()
            ));
            self.waiting = line;
        }
    }

    /// Whether a step so far changed the cluster.
    pub(super) fn changed(&self) -> bool {
        self.report
            .steps
            .iter()
            .any(|s| matches!(s.action.as_str(), "created" | "updated" | "deleted"))
    }

    pub(super) fn push(
        &mut self,
        action: &str,
        object: impl Into<String>,
        detail: impl Into<String>,
    ) {
        let step = Step {
            action: action.into(),
            object: object.into(),
            detail: detail.into(),
            at_seconds: (self.started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        };
        if let Some(progress) = &self.progress {
            progress(&step.line());
        }
        self.report.steps.push(step);
    }
}

/// What a wait shows: the stage, and the object and reason read, if any.
pub fn waiting_line(stage: Stage, stuck: Option<&diagnosis::Stuck>) -> String {
    match stuck {
        Some(stuck) => format!("waiting for {stage}: {}: {}", stuck.object, stuck.reason),
        None => format!("waiting for {stage}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_shows_its_stage_and_what_the_cluster_says() {
        assert_eq!(
            waiting_line(Stage::Succeeded, None),
            "waiting for the ClusterServiceVersion to succeed"
        );
        let stuck = diagnosis::Stuck {
            object: "ClusterServiceVersion ns/op.v1".into(),
            reason: "phase Installing".into(),
            next: String::new(),
            terminal: false,
        };
        assert_eq!(
            waiting_line(Stage::Succeeded, Some(&stuck)),
            "waiting for the ClusterServiceVersion to succeed: ClusterServiceVersion ns/op.v1: phase Installing"
        );
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut steps = Steps::new(
            Instant::now(),
            Some(std::sync::Arc::new(move |line: &str| {
                sink.lock().unwrap().push(line.to_string())
            })),
        );
        steps.push("created", "Pod ns/p", "");
        steps.waiting(Stage::Succeeded, Some(&stuck));
        steps.waiting(Stage::Succeeded, Some(&stuck));
        let lines = seen.lock().unwrap().clone();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("created Pod ns/p"));
        assert!(lines[1].ends_with("phase Installing"));
    }
}
