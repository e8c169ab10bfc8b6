//! [`JobQueue`]: one supervisor actor per kind, its linked workers, and the handle that
//! submits to it.
//!
//! The supervisor holds the waiting jobs by due time (keys only), hands a due job to an
//! idle worker, and learns from the worker how it was settled. A worker settles its own
//! job (stores the retry or the failure through the kind) before it reports, so a job is
//! never stored by two actors at once. When a worker dies mid-job (a panic, a kill) the
//! supervisor settles the job as a failed attempt and starts a new worker after the
//! kind's back-off.
//!
//! A queue is opened before the kind exists ([`JobQueue::open`]) and runs once it does
//! ([`JobQueue::run`]): the service holds the handle of a queue whose kind needs the
//! service, with no late wiring. Jobs submitted in between wait for the workers.

use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::kind::{JobKind, Outcome, PausePolicy, Pending};
use crate::metrics::{Event, JobMetrics, JobMetricsSnapshot};
use memvault_types::Failure;

/// Bounds of the supervisor's tick, which starts jobs whose due time has come: half the
/// kind's initial back-off, within these.
const TICK_MIN: Duration = Duration::from_millis(20);
const TICK_MAX: Duration = Duration::from_secs(1);
/// How long stopping waits for a running job.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// How long a job waits while its group's probe runs, before it looks again.
const PROBE_WAIT_MS: i64 = 200;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("the {0} queue did not start: {1}")]
    Start(&'static str, String),
    #[error("the {0} queue is stopped")]
    Stopped(&'static str),
    #[error("the {0} queue is already running")]
    AlreadyRunning(&'static str),
}

/// The handle to one kind's queue; cheap to clone.
pub struct JobQueue<K: JobKind> {
    supervisor: ActorRef<SupervisorMessage<K>>,
    metrics: Arc<JobMetrics>,
}

impl<K: JobKind> Clone for JobQueue<K> {
    fn clone(&self) -> Self {
        Self {
            supervisor: self.supervisor.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

impl<K: JobKind> JobQueue<K> {
    /// Opens and runs the kind's queue: [`Self::open`], then [`Self::run`].
    pub async fn start(kind: Arc<K>, workers: usize) -> Result<Self, JobError> {
        let queue = Self::open().await?;
        queue.run(kind, workers).await?;
        Ok(queue)
    }

    /// Starts the kind's supervisor without workers: jobs submitted now wait until
    /// [`Self::run`].
    pub async fn open() -> Result<Self, JobError> {
        let metrics = Arc::new(JobMetrics::default());
        let (supervisor, _) = Actor::spawn(None, JobSupervisor::<K>(PhantomData), metrics.clone())
            .await
            .map_err(|error| JobError::Start(K::NAME, error.to_string()))?;
        Ok(Self {
            supervisor,
            metrics,
        })
    }

    /// Gives the queue its kind and `workers` workers, and queues every job the kind
    /// reports unfinished (those already submitted are not queued twice).
    pub async fn run(&self, kind: Arc<K>, workers: usize) -> Result<(), JobError> {
        let unfinished = kind
            .unfinished()
            .await
            .map_err(|error| JobError::Start(K::NAME, error.to_string()))?;
        if !unfinished.is_empty() {
            tracing::info!(
                kind = K::NAME,
                jobs = unfinished.len(),
                "resuming unfinished jobs"
            );
        }
        let failing = kind
            .failing_groups()
            .await
            .map_err(|error| JobError::Start(K::NAME, error.to_string()))?;
        let start = Start {
            kind,
            workers: workers.max(1),
            unfinished,
            failing,
        };
        let answer = self
            .supervisor
            .call(|reply| SupervisorMessage::Start(start, reply), None)
            .await
            .map_err(|error| JobError::Start(K::NAME, error.to_string()))?;
        let ractor::rpc::CallResult::Success(started) = answer else {
            return Err(JobError::Stopped(K::NAME));
        };
        started.map_err(|error| match error {
            StartError::AlreadyRunning => JobError::AlreadyRunning(K::NAME),
            StartError::Workers(reason) => JobError::Start(K::NAME, reason),
        })
    }

    /// Queues a job the caller has already persisted, due now.
    pub fn submit(&self, key: K::Key) -> Result<(), JobError> {
        self.submit_pending(Pending::new(key))
    }

    /// Queues a persisted job with its attempts so far and due time.
    pub fn submit_pending(&self, pending: Pending<K::Key>) -> Result<(), JobError> {
        self.supervisor
            .cast(SupervisorMessage::Submit(pending))
            .map_err(|_| JobError::Stopped(K::NAME))
    }

    pub fn metrics(&self) -> JobMetricsSnapshot {
        self.metrics.snapshot()
    }

    /// Stops the workers (a running job gets a while to finish; one cut short stays
    /// unfinished in the kind's store and runs at the next start) and the supervisor.
    pub async fn stop(&self) {
        let _ = self
            .supervisor
            .stop_and_wait(Some("stopping".to_owned()), Some(STOP_WAIT * 2))
            .await;
    }

    /// Asks the kind for its unfinished jobs again and queues those neither waiting nor
    /// running: work that became this queue's after the start (several nodes: a tenant
    /// this node took over from one that died).
    pub fn rescan(&self) -> Result<(), JobError> {
        self.supervisor
            .cast(SupervisorMessage::Rescan)
            .map_err(|_| JobError::Stopped(K::NAME))
    }

    /// Ends the pause of `group` now: its jobs are due again (a setting that caused the
    /// failures has changed).
    pub fn resume(&self, group: &str) -> Result<(), JobError> {
        self.supervisor
            .cast(SupervisorMessage::Resume(group.to_owned()))
            .map_err(|_| JobError::Stopped(K::NAME))
    }

    /// Queues a job that has failed `attempts` times outside the queue (a manual run): it
    /// runs after the kind's back-off for that many failures, stored through
    /// [`JobKind::retry_at`].
    pub fn submit_failed(&self, key: K::Key, attempts: u32) -> Result<(), JobError> {
        self.supervisor
            .cast(SupervisorMessage::SubmitFailed(key, attempts))
            .map_err(|_| JobError::Stopped(K::NAME))
    }

    /// Counts work of `group` done outside the queue (a manual run a client waits for)
    /// as its jobs count: a success ends the group's failures and any pause, a failure
    /// counts toward the pause. Whether the group is paused now.
    pub async fn report(
        &self,
        group: &str,
        outcome: Result<(), Failure>,
    ) -> Result<bool, JobError> {
        let group = group.to_owned();
        let answer = self
            .supervisor
            .call(
                |reply| SupervisorMessage::Report(group, outcome, reply),
                None,
            )
            .await
            .map_err(|_| JobError::Stopped(K::NAME))?;
        match answer {
            ractor::rpc::CallResult::Success(paused) => Ok(paused),
            _ => Err(JobError::Stopped(K::NAME)),
        }
    }

    /// Whether the queue's supervisor is alive (the operator's watch of it).
    pub fn is_running(&self) -> bool {
        matches!(
            self.supervisor.get_status(),
            ractor::ActorStatus::Starting
                | ractor::ActorStatus::Running
                | ractor::ActorStatus::Upgrading
        )
    }

    /// The workers now alive, for tests that kill one mid-job.
    pub fn workers(&self) -> Vec<ractor::ActorCell> {
        self.supervisor.get_children()
    }
}

/// How a worker left a job.
enum Settled<Key> {
    /// Finished successfully.
    Done,
    /// Failed; stored to run again at its due time.
    Again(Pending<Key>, Failure),
    /// Failed for good.
    Failed(Failure),
}

/// Carries out an attempt's outcome through the kind: a retry is stored with its due
/// time, a job out of attempts is given up.
async fn settle<K: JobKind>(
    kind: &K,
    pending: Pending<K::Key>,
    outcome: Outcome,
) -> Settled<K::Key> {
    let attempts = pending.attempts.saturating_add(1);
    let reason = match outcome {
        Outcome::Done => return Settled::Done,
        Outcome::Deferred(reason) => {
            let wait = kind.policy().backoff.delay(1);
            let due = Utc::now()
                + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::seconds(1));
            tracing::info!(kind = K::NAME, job = ?pending.key, %reason, "job deferred: what it needs is down");
            kind.retry_at(&pending.key, pending.attempts, due, &reason)
                .await;
            return Settled::Again(Pending { due, ..pending }, reason);
        }
        Outcome::Failed(reason) => {
            tracing::warn!(kind = K::NAME, job = ?pending.key, attempts, %reason, "job failed");
            return Settled::Failed(reason);
        }
        Outcome::Retry(reason) => reason,
    };
    let policy = kind.policy();
    if attempts >= policy.max_attempts {
        tracing::warn!(kind = K::NAME, job = ?pending.key, attempts, %reason, "job given up");
        kind.give_up(&pending.key, attempts, &reason).await;
        return Settled::Failed(reason);
    }
    let wait = policy.backoff.delay(attempts);
    let due = Utc::now() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1));
    tracing::info!(
        kind = K::NAME,
        job = ?pending.key,
        attempts,
        retry_in_ms = wait.as_millis() as u64,
        %reason,
        "job attempt failed; will retry"
    );
    kind.retry_at(&pending.key, attempts, due, &reason).await;
    Settled::Again(
        Pending {
            key: pending.key,
            attempts,
            due,
        },
        reason,
    )
}

/// When a pause that begins now ends: after the policy's `pause_for`, or never (until
/// resumed).
fn pause_end(policy: &PausePolicy) -> DateTime<Utc> {
    match policy.pause_for {
        Some(pause) => {
            Utc::now() + chrono::Duration::from_std(pause).unwrap_or(chrono::Duration::hours(1))
        }
        None => DateTime::<Utc>::MAX_UTC,
    }
}

/// What [`JobQueue::run`] gives the supervisor.
struct Start<K: JobKind> {
    kind: Arc<K>,
    workers: usize,
    unfinished: Vec<Pending<K::Key>>,
    /// Consecutive failures by group when the process stopped.
    failing: Vec<(String, u32)>,
}

enum StartError {
    AlreadyRunning,
    Workers(String),
}

enum SupervisorMessage<K: JobKind> {
    /// The kind and its workers: the queue runs from now on.
    Start(Start<K>, ractor::RpcReplyPort<Result<(), StartError>>),
    /// A persisted job to queue.
    Submit(Pending<K::Key>),
    /// A job that failed this many times outside the queue.
    SubmitFailed(K::Key, u32),
    /// A worker settled its job and is idle again.
    Finished {
        worker: ActorId,
        settled: Settled<K::Key>,
    },
    /// Timer: start the jobs whose due time has come.
    Tick,
    /// Sent to itself after a back-off: start a worker in place of a failed one.
    StartWorker,
    /// End the group's pause now.
    Resume(String),
    /// Work of a group done outside the queue; answers whether the group is paused.
    Report(String, Result<(), Failure>, ractor::RpcReplyPort<bool>),
    /// Ask the kind for its unfinished jobs again and queue those not queued or running.
    Rescan,
}

struct JobSupervisor<K>(PhantomData<fn() -> K>);

/// A busy worker and the job it holds.
type Busy<K> = (ActorRef<WorkerMessage<K>>, Pending<<K as JobKind>::Key>);

/// Consecutive failures of one group, until when it is paused, and its probe after a
/// pause.
#[derive(Debug, Default)]
struct GroupState {
    failures: u32,
    paused_until: Option<DateTime<Utc>>,
    /// The pause has ended and no job of the group has succeeded since: one job runs at a
    /// time, and a failure pauses the group again at once.
    probing: bool,
    /// The probe is running now.
    probe_running: bool,
}

struct SupervisorState<K: JobKind> {
    /// Runs the jobs; shared with every worker. `None` until [`JobQueue::run`]: the
    /// jobs wait.
    kind: Option<Arc<K>>,
    /// Counted here, read by the operator endpoint.
    metrics: Arc<JobMetrics>,
    /// Waiting jobs by (due time, submission order): the earliest due first, ties in the
    /// order they came.
    waiting: BTreeMap<(DateTime<Utc>, u64), Pending<K::Key>>,
    /// Next submission number, for the tie order.
    sequence: u64,
    idle: Vec<ActorRef<WorkerMessage<K>>>,
    /// Busy workers and the job each holds (to settle it if the worker dies).
    busy: HashMap<ActorId, Busy<K>>,
    /// Failure counts and pauses by group; only groups that failed are here.
    groups: HashMap<String, GroupState>,
    /// The tick's task, stopped with the supervisor.
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl<K: JobKind> SupervisorState<K> {
    fn enqueue(&mut self, pending: Pending<K::Key>) {
        self.sequence += 1;
        self.waiting.insert((pending.due, self.sequence), pending);
    }

    /// Until when the job must wait for its group: the pause's end, or a moment while
    /// the group's probe runs. `None` lets it run (and makes it the probe after a pause).
    fn held_until(&mut self, key: &K::Key, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let name = self.kind.as_ref()?.group(key);
        let group = self.groups.get_mut(&name)?;
        match group.paused_until {
            Some(until) if until > now => return Some(until),
            Some(_) => {
                group.paused_until = None;
                group.probing = true;
            }
            None => {}
        }
        if group.probing {
            if group.probe_running {
                return Some(now + chrono::Duration::milliseconds(PROBE_WAIT_MS));
            }
            group.probe_running = true;
        }
        None
    }

    /// Hands due jobs to idle workers; a job of a paused group moves to the pause's end.
    fn dispatch(&mut self) {
        let now = Utc::now();
        if self.kind.is_none() {
            self.publish_gauges(now);
            return;
        }
        while !self.idle.is_empty() {
            let Some(entry) = self.waiting.first_entry() else {
                break;
            };
            if entry.key().0 > now {
                break;
            }
            let pending = entry.remove();
            if let Some(until) = self.held_until(&pending.key, now) {
                self.enqueue(Pending {
                    due: until,
                    ..pending
                });
                continue;
            }
            let Some(worker) = self.idle.pop() else {
                self.enqueue(pending);
                break;
            };
            if worker.cast(WorkerMessage::Run(pending.clone())).is_err() {
                self.release_probe(&pending.key);
                self.enqueue(pending);
                continue;
            }
            self.busy.insert(worker.get_id(), (worker, pending));
        }
        self.publish_gauges(now);
    }

    /// The job did not start after all: its group's probe is free again.
    fn release_probe(&mut self, key: &K::Key) {
        let Some(kind) = &self.kind else {
            return;
        };
        if let Some(group) = self.groups.get_mut(&kind.group(key)) {
            group.probe_running = false;
        }
    }

    fn publish_gauges(&self, now: DateTime<Utc>) {
        let paused = self
            .groups
            .values()
            .filter(|group| group.paused_until.is_some_and(|until| until > now))
            .count();
        self.metrics
            .set_gauges(self.waiting.len(), self.busy.len(), paused);
    }

    /// Counts a settled job against its group; the group and the reason when it has just
    /// paused (for [`JobKind::paused`]).
    fn record(&mut self, key: &K::Key, settled: Settled<K::Key>) -> Option<(String, Failure)> {
        let kind = self.kind.clone()?;
        let group = kind.group(key);
        let reason = match settled {
            Settled::Done => {
                self.metrics.count(Event::Done);
                self.succeeded(&group);
                return None;
            }
            Settled::Again(pending, reason) => {
                self.metrics.count(Event::Retried);
                self.enqueue(pending);
                reason
            }
            Settled::Failed(reason) => {
                self.metrics.count(Event::Failed);
                reason
            }
        };
        self.failed(&group).then_some((group, reason))
    }

    /// A success of the group: its failures are forgotten and its pause, if any, ends
    /// (its held jobs are due now).
    fn succeeded(&mut self, group: &str) {
        let Some(state) = self.groups.remove(group) else {
            return;
        };
        if state.paused_until.is_none() {
            return;
        }
        let Some(kind) = self.kind.clone() else {
            return;
        };
        tracing::info!(kind = K::NAME, %group, "job group resumed");
        let now = Utc::now();
        let held: Vec<_> = std::mem::take(&mut self.waiting).into_values().collect();
        for mut pending in held {
            if kind.group(&pending.key) == group {
                pending.due = pending.due.min(now);
            }
            self.enqueue(pending);
        }
    }

    /// A failure of the group; whether it has just paused under the kind's policy.
    fn failed(&mut self, name: &str) -> bool {
        let Some(policy) = self.kind.as_ref().and_then(|kind| kind.pause_policy()) else {
            return false;
        };
        let group = self.groups.entry(name.to_owned()).or_default();
        group.failures += 1;
        let probe_failed = group.probing;
        group.probing = false;
        group.probe_running = false;
        if !probe_failed && group.failures < policy.after_failures {
            return false;
        }
        group.failures = 0;
        group.paused_until = Some(pause_end(&policy));
        self.metrics.count(Event::Pause);
        tracing::warn!(
            kind = K::NAME,
            group = %name,
            pause_ms = policy.pause_for.map(|pause| pause.as_millis() as u64),
            "job group paused after consecutive failures"
        );
        true
    }

    /// Queues the kind's unfinished jobs that are neither waiting nor running.
    async fn rescan(&mut self) {
        let Some(kind) = self.kind.clone() else {
            return;
        };
        let unfinished = match kind.unfinished().await {
            Ok(unfinished) => unfinished,
            Err(error) => {
                tracing::warn!(kind = K::NAME, %error, "rescanning unfinished jobs failed");
                return;
            }
        };
        for pending in unfinished {
            let known = self
                .waiting
                .values()
                .any(|queued| queued.key == pending.key)
                || self
                    .busy
                    .values()
                    .any(|(_, running)| running.key == pending.key);
            if !known {
                self.enqueue(pending);
            }
        }
    }

    /// Takes the kind: starts its workers and its tick, and queues its unfinished jobs
    /// but those already waiting.
    async fn start(
        &mut self,
        myself: &ActorRef<SupervisorMessage<K>>,
        start: Start<K>,
    ) -> Result<(), StartError> {
        if self.kind.is_some() {
            return Err(StartError::AlreadyRunning);
        }
        for _ in 0..start.workers {
            let worker = start_worker(myself, &start.kind)
                .await
                .map_err(|error| StartError::Workers(error.to_string()))?;
            self.idle.push(worker);
        }
        if let Some(policy) = start.kind.pause_policy() {
            for (name, failures) in start.failing {
                let group = self.groups.entry(name).or_default();
                if failures >= policy.after_failures {
                    group.paused_until = Some(pause_end(&policy));
                } else {
                    group.failures = failures;
                }
            }
        }
        for pending in start.unfinished {
            let queued = self
                .waiting
                .values()
                .any(|waiting| waiting.key == pending.key);
            if !queued {
                self.enqueue(pending);
            }
        }
        let period = (start.kind.policy().backoff.initial / 2).clamp(TICK_MIN, TICK_MAX);
        let ticker = myself.clone();
        self.ticker = Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                if ticker.cast(SupervisorMessage::Tick).is_err() {
                    return;
                }
            }
        }));
        self.kind = Some(start.kind);
        Ok(())
    }

    /// Lets the kind store a pause that has just begun.
    async fn tell_paused(&self, paused: Option<(String, Failure)>) {
        if let (Some((group, reason)), Some(kind)) = (paused, &self.kind) {
            kind.paused(&group, &reason).await;
        }
    }

    fn schedule_worker_start(&mut self, myself: &ActorRef<SupervisorMessage<K>>) {
        let Some(kind) = &self.kind else {
            return;
        };
        // The one restart policy, at the kind's pace.
        let policy = memvault_types::RestartPolicy {
            backoff: kind.policy().backoff,
            ..memvault_types::RestartPolicy::ACTORS
        };
        let delay = self
            .metrics
            .workers
            .failed(&policy, std::time::Instant::now());
        myself.send_after(delay, || SupervisorMessage::StartWorker);
    }
}

async fn start_worker<K: JobKind>(
    supervisor: &ActorRef<SupervisorMessage<K>>,
    kind: &Arc<K>,
) -> Result<ActorRef<WorkerMessage<K>>, ActorProcessingErr> {
    let args = WorkerState {
        kind: kind.clone(),
        supervisor: supervisor.clone(),
    };
    let (worker, _) = Actor::spawn_linked(
        None,
        JobWorker::<K>(PhantomData),
        args,
        supervisor.get_cell(),
    )
    .await?;
    Ok(worker)
}

impl<K: JobKind> Actor for JobSupervisor<K> {
    type Msg = SupervisorMessage<K>;
    type State = SupervisorState<K>;
    type Arguments = Arc<JobMetrics>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        metrics: Arc<JobMetrics>,
    ) -> Result<SupervisorState<K>, ActorProcessingErr> {
        Ok(SupervisorState {
            kind: None,
            metrics,
            waiting: BTreeMap::new(),
            sequence: 0,
            idle: Vec::new(),
            busy: HashMap::new(),
            groups: HashMap::new(),
            ticker: None,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut SupervisorState<K>,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(ticker) = state.ticker.take() {
            ticker.abort();
        }
        let workers = state
            .idle
            .drain(..)
            .chain(state.busy.drain().map(|(_, (worker, _))| worker));
        for worker in workers {
            let _ = worker
                .stop_and_wait(Some("queue stopped".to_owned()), Some(STOP_WAIT))
                .await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: SupervisorMessage<K>,
        state: &mut SupervisorState<K>,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMessage::Start(start, reply) => {
                let started = state.start(&myself, start).await;
                let _ = reply.send(started);
            }
            SupervisorMessage::Submit(pending) => state.enqueue(pending),
            SupervisorMessage::SubmitFailed(key, attempts) => {
                if let Some(kind) = state.kind.clone() {
                    let wait = kind.policy().backoff.delay(attempts.max(1));
                    let due = Utc::now()
                        + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1));
                    let reason = Failure::internal("failed outside the queue");
                    kind.retry_at(&key, attempts, due, &reason).await;
                    state.enqueue(Pending { key, attempts, due });
                }
            }
            SupervisorMessage::Finished { worker, settled } => {
                if let Some((worker, pending)) = state.busy.remove(&worker) {
                    state.idle.push(worker);
                    let paused = state.record(&pending.key, settled);
                    state.tell_paused(paused).await;
                }
            }
            SupervisorMessage::Tick => {}
            SupervisorMessage::Rescan => state.rescan().await,
            SupervisorMessage::Resume(group) => {
                state.succeeded(&group);
            }
            SupervisorMessage::Report(group, outcome, reply) => {
                match outcome {
                    Ok(()) => state.succeeded(&group),
                    Err(reason) => {
                        let paused = state.failed(&group).then(|| (group.clone(), reason));
                        state.tell_paused(paused).await;
                    }
                }
                let paused = state
                    .groups
                    .get(&group)
                    .is_some_and(|group| group.paused_until.is_some());
                let _ = reply.send(paused);
            }
            SupervisorMessage::StartWorker => {
                let Some(kind) = state.kind.clone() else {
                    return Ok(());
                };
                match start_worker(&myself, &kind).await {
                    Ok(worker) => state.idle.push(worker),
                    Err(error) => {
                        tracing::warn!(kind = K::NAME, %error, "job worker did not start; retrying");
                        state.schedule_worker_start(&myself);
                    }
                }
            }
        }
        state.dispatch();
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut SupervisorState<K>,
    ) -> Result<(), ActorProcessingErr> {
        let (id, reason) = match event {
            SupervisionEvent::ActorFailed(cell, error) => (cell.get_id(), error.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                (cell.get_id(), reason.unwrap_or_else(|| "killed".to_owned()))
            }
            _ => return Ok(()),
        };
        state.idle.retain(|worker| worker.get_id() != id);
        let held = state.busy.remove(&id);
        state.metrics.count(Event::Restart);
        tracing::warn!(kind = K::NAME, job = ?held.as_ref().map(|(_, pending)| &pending.key), %reason, "job worker died; restarting it");
        if let (Some((_, pending)), Some(kind)) = (held, state.kind.clone()) {
            let key = pending.key.clone();
            let outcome = Outcome::Retry(memvault_types::Failure::internal(format!(
                "the worker died: {reason}"
            )));
            let settled = settle(&*kind, pending, outcome).await;
            let paused = state.record(&key, settled);
            state.tell_paused(paused).await;
        }
        state.schedule_worker_start(&myself);
        state.dispatch();
        Ok(())
    }
}

enum WorkerMessage<K: JobKind> {
    Run(Pending<K::Key>),
}

struct JobWorker<K>(PhantomData<fn() -> K>);

struct WorkerState<K: JobKind> {
    kind: Arc<K>,
    supervisor: ActorRef<SupervisorMessage<K>>,
}

impl<K: JobKind> Actor for JobWorker<K> {
    type Msg = WorkerMessage<K>;
    type State = WorkerState<K>;
    type Arguments = WorkerState<K>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: WorkerState<K>,
    ) -> Result<WorkerState<K>, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: WorkerMessage<K>,
        state: &mut WorkerState<K>,
    ) -> Result<(), ActorProcessingErr> {
        let WorkerMessage::Run(pending) = message;
        let outcome = state
            .kind
            .run(&pending.key, pending.attempts.saturating_add(1))
            .await;
        let settled = settle(&*state.kind, pending, outcome).await;
        let _ = state.supervisor.cast(SupervisorMessage::Finished {
            worker: myself.get_id(),
            settled,
        });
        Ok(())
    }
}
