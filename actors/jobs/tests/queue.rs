//! The job system with a scripted kind: runs, retries, give-ups, worker deaths, resumed
//! jobs and auto-pause, observed through the kind's store and the metrics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{
    Backoff, Failure, JobKind, JobQueue, Outcome, PausePolicy, Pending, RetryPolicy,
};
use memvault_types::ErrorCode;
use tokio::sync::Notify;

/// What a scripted job does on each attempt (1-based); past the script it succeeds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Succeed,
    Fail,
    FailForGood,
    Panic,
    /// Blocks until the test releases it (so the test can kill the worker).
    Block,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Record {
    /// Attempts the kind has seen started.
    started: u32,
    /// What the queue stored through retry_at / give_up.
    stored_attempts: u32,
    state: &'static str,
    reason: String,
}

#[derive(Default)]
struct Scripted {
    scripts: Mutex<HashMap<String, Vec<Step>>>,
    records: Mutex<HashMap<String, Record>>,
    unfinished: Mutex<Vec<Pending<String>>>,
    release: Notify,
    pause: Option<PausePolicy>,
    /// Groups whose dependency is down: their jobs are deferred.
    down: Mutex<std::collections::HashSet<String>>,
    /// Consecutive failures by group as "stored" before the queue started.
    failing: Vec<(String, u32)>,
    /// Groups the queue said have paused, with the reason.
    paused: Mutex<Vec<(String, String)>>,
}

impl Scripted {
    fn script(&self, key: &str, steps: &[Step]) {
        self.scripts
            .lock()
            .unwrap()
            .insert(key.to_owned(), steps.to_vec());
    }

    fn record(&self, key: &str) -> Record {
        self.records
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    fn update(&self, key: &str, change: impl FnOnce(&mut Record)) {
        change(
            self.records
                .lock()
                .unwrap()
                .entry(key.to_owned())
                .or_default(),
        );
    }
}

#[async_trait]
impl JobKind for Scripted {
    type Key = String;
    const NAME: &'static str = "scripted";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::new(Duration::from_millis(10), Duration::from_millis(40)),
        }
    }

    fn pause_policy(&self) -> Option<PausePolicy> {
        self.pause
    }

    fn group(&self, key: &String) -> String {
        key.split('/').next().unwrap_or_default().to_owned()
    }

    async fn unfinished(&self) -> Result<Vec<Pending<String>>, Failure> {
        Ok(self.unfinished.lock().unwrap().clone())
    }

    async fn failing_groups(&self) -> Result<Vec<(String, u32)>, Failure> {
        Ok(self.failing.clone())
    }

    async fn paused(&self, group: &str, reason: &Failure) {
        let entry = (group.to_owned(), reason.to_string());
        self.paused.lock().unwrap().push(entry);
    }

    async fn run(&self, key: &String, attempt: u32) -> Outcome {
        self.update(key, |record| {
            record.started += 1;
            record.state = "running";
        });
        if self.down.lock().unwrap().contains(&self.group(key)) {
            self.update(key, |record| record.state = "deferred");
            return Outcome::Deferred(Failure::new(
                ErrorCode::UpstreamFailed,
                "the dependency is down",
            ));
        }
        let step = self
            .scripts
            .lock()
            .unwrap()
            .get(key)
            .and_then(|steps| steps.get(attempt as usize - 1).copied())
            .unwrap_or(Step::Succeed);
        match step {
            Step::Succeed => {
                self.update(key, |record| record.state = "done");
                Outcome::Done
            }
            Step::Fail => Outcome::Retry(Failure::internal(format!("attempt {attempt} failed"))),
            Step::FailForGood => {
                self.update(key, |record| record.state = "failed");
                Outcome::Failed(Failure::new(ErrorCode::InvalidBody, "bad input"))
            }
            Step::Panic => panic!("scripted panic"),
            Step::Block => {
                self.release.notified().await;
                self.update(key, |record| record.state = "done");
                Outcome::Done
            }
        }
    }

    async fn retry_at(&self, key: &String, attempts: u32, _due: DateTime<Utc>, reason: &Failure) {
        self.update(key, |record| {
            record.stored_attempts = attempts;
            record.state = "waiting";
            record.reason = reason.to_string();
        });
    }

    async fn give_up(&self, key: &String, attempts: u32, reason: &Failure) {
        self.update(key, |record| {
            record.stored_attempts = attempts;
            record.state = "failed";
            record.reason = reason.to_string();
        });
    }
}

async fn until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn jobs_run_and_are_counted() {
    let kind = Arc::new(Scripted::default());
    let queue = JobQueue::start(kind.clone(), 2).await.unwrap();
    for key in ["a/1", "a/2", "b/1"] {
        queue.submit(key.to_owned()).unwrap();
    }
    until("three jobs done", || queue.metrics().done == 3).await;
    for key in ["a/1", "a/2", "b/1"] {
        assert_eq!(kind.record(key).state, "done");
        assert_eq!(kind.record(key).started, 1);
    }
    let metrics = queue.metrics();
    assert_eq!(
        (metrics.retried, metrics.failed, metrics.restarts),
        (0, 0, 0)
    );
    queue.stop().await;
}

#[tokio::test]
async fn a_failed_attempt_is_retried_after_the_backoff_and_stored() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Fail, Step::Fail, Step::Succeed]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    until("the job done", || kind.record("a/1").state == "done").await;
    let record = kind.record("a/1");
    assert_eq!(record.started, 3);
    assert_eq!(record.stored_attempts, 2, "the second failure was stored");
    assert_eq!(record.reason, "attempt 2 failed");
    until("metrics", || queue.metrics().done == 1).await;
    assert_eq!(queue.metrics().retried, 2);
    queue.stop().await;
}

#[tokio::test]
async fn a_job_out_of_attempts_is_given_up_with_its_last_reason() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Fail, Step::Fail, Step::Fail, Step::Succeed]);
    kind.script("a/2", &[Step::FailForGood]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    queue.submit("a/2".to_owned()).unwrap();
    until("both failed", || queue.metrics().failed == 2).await;
    let record = kind.record("a/1");
    assert_eq!((record.started, record.stored_attempts), (3, 3));
    assert_eq!(record.state, "failed");
    assert_eq!(record.reason, "attempt 3 failed");
    assert_eq!(
        kind.record("a/2").started,
        1,
        "a job failed for good is not retried"
    );
    queue.stop().await;
}

#[tokio::test]
async fn a_worker_killed_mid_job_is_restarted_and_the_job_finishes() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Block, Step::Succeed]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    until("the job running", || kind.record("a/1").state == "running").await;
    let workers = queue.workers();
    assert_eq!(workers.len(), 1);
    workers[0].kill();
    until("the job done", || kind.record("a/1").state == "done").await;
    let record = kind.record("a/1");
    assert_eq!(record.started, 2, "killed on attempt 1, done on attempt 2");
    assert_eq!(record.stored_attempts, 1);
    assert!(record.reason.contains("the worker died"), "{record:?}");
    until("metrics", || queue.metrics().done == 1).await;
    assert_eq!(queue.metrics().restarts, 1);
    until("a worker again", || queue.workers().len() == 1).await;
    queue.stop().await;
}

#[tokio::test]
async fn a_worker_that_panics_is_restarted_and_the_job_runs_again() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Panic, Step::Panic, Step::Succeed]);
    kind.script("a/2", &[Step::Panic, Step::Panic, Step::Panic]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    queue.submit("a/2".to_owned()).unwrap();
    until("one done, one given up", || {
        let metrics = queue.metrics();
        metrics.done == 1 && metrics.failed == 1
    })
    .await;
    assert_eq!(kind.record("a/1").state, "done");
    assert_eq!(kind.record("a/2").state, "failed");
    assert_eq!(kind.record("a/2").stored_attempts, 3);
    assert_eq!(queue.metrics().restarts, 5);
    queue.stop().await;
}

#[tokio::test]
async fn unfinished_jobs_are_resumed_at_start_with_their_attempts() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Fail, Step::Fail, Step::Fail]);
    kind.unfinished.lock().unwrap().push(Pending {
        key: "a/1".to_owned(),
        attempts: 2,
        due: Utc::now(),
    });
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    until("the job failed", || kind.record("a/1").state == "failed").await;
    let record = kind.record("a/1");
    assert_eq!(
        record.started, 1,
        "two attempts were used before the restart"
    );
    assert_eq!(record.stored_attempts, 3);
    queue.stop().await;
}

#[tokio::test]
async fn a_group_that_keeps_failing_pauses_and_the_others_run_on() {
    let kind = Arc::new(Scripted {
        pause: Some(PausePolicy {
            after_failures: 2,
            pause_for: Some(Duration::from_millis(300)),
        }),
        ..Scripted::default()
    });
    kind.script("bad/1", &[Step::FailForGood]);
    kind.script("bad/2", &[Step::FailForGood]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("bad/1".to_owned()).unwrap();
    queue.submit("bad/2".to_owned()).unwrap();
    until("the group paused", || queue.metrics().pauses == 1).await;
    assert_eq!(queue.metrics().paused_groups, 1);
    queue.submit("bad/3".to_owned()).unwrap();
    queue.submit("good/1".to_owned()).unwrap();
    until("the other group ran", || {
        kind.record("good/1").state == "done"
    })
    .await;
    assert_eq!(kind.record("bad/3").started, 0, "the paused group waits");
    until("the pause over", || kind.record("bad/3").state == "done").await;
    queue.stop().await;
}

#[tokio::test]
async fn an_opened_queue_holds_its_jobs_until_it_runs_and_queues_each_once() {
    let kind = Arc::new(Scripted::default());
    // "a/1" is both submitted before the run and reported unfinished by the kind.
    kind.unfinished.lock().unwrap().extend([
        Pending::new("a/1".to_owned()),
        Pending::new("b/1".to_owned()),
    ]);
    let queue = JobQueue::<Scripted>::open().await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(kind.record("a/1").started, 0, "no worker before run");
    assert_eq!(queue.metrics().queued, 1);

    queue.run(kind.clone(), 1).await.unwrap();
    until("both jobs done", || queue.metrics().done == 2).await;
    assert_eq!(kind.record("a/1").started, 1, "queued once, run once");
    assert_eq!(kind.record("b/1").started, 1);
    assert!(matches!(
        queue.run(kind.clone(), 1).await,
        Err(memvault_jobs::JobError::AlreadyRunning(_))
    ));
    queue.stop().await;
}

#[tokio::test]
async fn a_group_whose_dependency_is_down_pauses_is_probed_and_loses_nothing() {
    let kind = Arc::new(Scripted {
        pause: Some(PausePolicy {
            after_failures: 3,
            pause_for: Some(Duration::from_millis(300)),
        }),
        ..Scripted::default()
    });
    kind.down.lock().unwrap().insert("a".to_owned());
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    let keys: Vec<String> = (1..=5).map(|n| format!("a/{n}")).collect();
    for key in &keys {
        queue.submit(key.clone()).unwrap();
    }
    queue.submit("b/1".to_owned()).unwrap();
    until("the group paused", || queue.metrics().pauses == 1).await;
    let started = |kind: &Scripted| keys.iter().map(|key| kind.record(key).started).sum::<u32>();
    assert_eq!(started(&kind), 3, "paused after three deferrals");
    until("the other group ran", || kind.record("b/1").state == "done").await;

    // The pause ends: one job probes, fails, and the group is paused again at once.
    until("paused again after the probe", || {
        queue.metrics().pauses == 2
    })
    .await;
    assert_eq!(started(&kind), 4, "one probe, not the whole group");

    // The dependency is back: the next probe succeeds and every job runs.
    kind.down.lock().unwrap().clear();
    until("every job done", || {
        keys.iter().all(|key| kind.record(key).state == "done")
    })
    .await;
    let metrics = queue.metrics();
    assert_eq!(metrics.failed, 0, "a deferral never gives a job up");
    for key in &keys {
        assert!(
            kind.record(key).stored_attempts == 0,
            "{key}: deferrals are not attempts"
        );
    }
    queue.stop().await;
}

#[tokio::test]
async fn resume_ends_a_pause_at_once() {
    let kind = Arc::new(Scripted {
        pause: Some(PausePolicy {
            after_failures: 1,
            pause_for: Some(Duration::from_secs(3600)),
        }),
        ..Scripted::default()
    });
    kind.down.lock().unwrap().insert("a".to_owned());
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    queue.submit("a/2".to_owned()).unwrap();
    until("the group paused", || queue.metrics().paused_groups == 1).await;
    kind.down.lock().unwrap().clear();
    queue.resume("a").unwrap();
    until("both done", || {
        kind.record("a/1").state == "done" && kind.record("a/2").state == "done"
    })
    .await;
    assert_eq!(queue.metrics().paused_groups, 0);
    queue.stop().await;
}

#[tokio::test]
async fn a_pause_without_an_end_holds_the_group_until_a_reported_success() {
    let kind = Arc::new(Scripted {
        pause: Some(PausePolicy {
            after_failures: 2,
            pause_for: None,
        }),
        ..Scripted::default()
    });
    kind.script("a/1", &[Step::Fail, Step::Fail, Step::Succeed]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    until("the group paused", || queue.metrics().paused_groups == 1).await;
    let paused = kind.paused.lock().unwrap().clone();
    assert_eq!(
        paused,
        vec![("a".to_owned(), "attempt 2 failed".to_owned())]
    );
    // Held: well past the back-off (40 ms at most), the third attempt has not started.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(kind.record("a/1").started, 2);
    // Work of another group runs on.
    queue.submit("b/1".to_owned()).unwrap();
    until("b done", || kind.record("b/1").state == "done").await;
    // A failure reported from outside keeps it paused; a success ends the pause.
    let failure = Failure::internal("a manual run failed");
    assert!(queue.report("a", Err(failure)).await.unwrap());
    assert!(!queue.report("a", Ok(())).await.unwrap());
    until("a done", || kind.record("a/1").state == "done").await;
    assert_eq!(queue.metrics().paused_groups, 0);
    queue.stop().await;
}

#[tokio::test]
async fn failures_stored_before_a_restart_count_toward_the_pause() {
    let kind = Arc::new(Scripted {
        pause: Some(PausePolicy {
            after_failures: 3,
            pause_for: None,
        }),
        failing: vec![("a".to_owned(), 3), ("b".to_owned(), 2)],
        ..Scripted::default()
    });
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    // "a" starts paused; "b" pauses at its next failure, reported from outside.
    assert_eq!(queue.metrics().paused_groups, 1);
    queue.submit("a/1".to_owned()).unwrap();
    let failure = Failure::internal("failed again");
    assert!(queue.report("b", Err(failure)).await.unwrap());
    assert_eq!(kind.paused.lock().unwrap().len(), 1, "b's pause was told");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(kind.record("a/1").started, 0, "a paused group's job waits");
    queue.resume("a").unwrap();
    until("a done", || kind.record("a/1").state == "done").await;
    queue.stop().await;
}

#[tokio::test]
async fn a_rescan_queues_new_unfinished_jobs_and_none_twice() {
    let kind = Arc::new(Scripted::default());
    kind.script("a/1", &[Step::Block]);
    let queue = JobQueue::start(kind.clone(), 1).await.unwrap();
    queue.submit("a/1".to_owned()).unwrap();
    until("a/1 running", || kind.record("a/1").state == "running").await;
    // Work that became this queue's after its start (a tenant taken over from a node that
    // died) is listed unfinished, next to the job now running.
    kind.unfinished
        .lock()
        .unwrap()
        .extend(["a/1", "b/1"].map(|key| Pending::new(key.to_owned())));
    queue.rescan().unwrap();
    queue.rescan().unwrap();
    kind.release.notify_one();
    until("both done", || queue.metrics().done == 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        kind.record("a/1").started,
        1,
        "the running job is not queued again"
    );
    assert_eq!(kind.record("b/1").started, 1, "two rescans queue it once");
    assert_eq!(queue.metrics().done, 2);
    queue.stop().await;
}
