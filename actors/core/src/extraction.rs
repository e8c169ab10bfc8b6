//! The extraction queue: a supervisor actor that hands queued remember jobs to a few
//! linked worker actors, one job each at a time.
//!
//! Jobs are persisted before they are queued, and every unfinished job is queued again at
//! start-up, so a job accepted before a crash runs after it. A worker that fails (panics)
//! is restarted with back-off; the job it held is queued again until it has been started
//! [`EXTRACT_JOB_MAX_ATTEMPTS`] times, then failed with a reason.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use chrono::Utc;
use memvault_storage::{ExtractJobRecord, JobState};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::service::Memvault;
use memvault_types::limits::EXTRACT_JOB_MAX_ATTEMPTS;

const RESTART_BACKOFF_START: Duration = Duration::from_millis(100);
const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(10);

pub enum ExtractionMessage {
    /// A persisted, queued job.
    Submit(Box<ExtractJobRecord>),
    /// A worker finished its job and is idle again.
    Finished { worker: ActorId },
    /// Sent to itself after a back-off: start a worker in place of a failed one.
    StartWorker,
}

pub struct ExtractionSupervisor;

pub struct ExtractionArgs {
    pub service: Memvault,
    pub workers: usize,
}

pub struct ExtractionState {
    service: Memvault,
    queue: VecDeque<ExtractJobRecord>,
    idle: Vec<ActorRef<WorkerMessage>>,
    /// Busy workers and the job each holds.
    busy: HashMap<ActorId, (ActorRef<WorkerMessage>, ExtractJobRecord)>,
    /// Consecutive worker failures, for the back-off.
    failures: u32,
    /// How many times a worker was restarted.
    pub restarts: u64,
}

impl ExtractionState {
    fn dispatch(&mut self) {
        while !self.queue.is_empty() {
            let Some(worker) = self.idle.pop() else {
                return;
            };
            let job = self.queue.pop_front().expect("checked non-empty");
            if worker.cast(WorkerMessage::Run(job.clone())).is_err() {
                self.queue.push_front(job);
                continue;
            }
            self.busy.insert(worker.get_id(), (worker, job));
        }
    }
}

async fn start_worker(
    supervisor: &ActorRef<ExtractionMessage>,
    service: &Memvault,
) -> Result<ActorRef<WorkerMessage>, ActorProcessingErr> {
    let args = WorkerArgs {
        service: service.clone(),
        supervisor: supervisor.clone(),
    };
    let (worker, _) =
        Actor::spawn_linked(None, ExtractionWorker, args, supervisor.get_cell()).await?;
    Ok(worker)
}

impl Actor for ExtractionSupervisor {
    type Msg = ExtractionMessage;
    type State = ExtractionState;
    type Arguments = ExtractionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ExtractionArgs,
    ) -> Result<ExtractionState, ActorProcessingErr> {
        let mut idle = Vec::with_capacity(args.workers);
        for _ in 0..args.workers.max(1) {
            idle.push(start_worker(&myself, &args.service).await?);
        }
        Ok(ExtractionState {
            service: args.service,
            queue: VecDeque::new(),
            idle,
            busy: HashMap::new(),
            failures: 0,
            restarts: 0,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut ExtractionState,
    ) -> Result<(), ActorProcessingErr> {
        // A job cut short stays `processing` in the store and runs again at the next start.
        let workers = state
            .idle
            .drain(..)
            .chain(state.busy.drain().map(|(_, (worker, _))| worker));
        for worker in workers {
            let _ = worker
                .stop_and_wait(
                    Some("extraction stopped".to_owned()),
                    Some(Duration::from_secs(10)),
                )
                .await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: ExtractionMessage,
        state: &mut ExtractionState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ExtractionMessage::Submit(job) => state.queue.push_back(*job),
            ExtractionMessage::Finished { worker } => {
                if let Some((worker, _)) = state.busy.remove(&worker) {
                    state.failures = 0;
                    state.idle.push(worker);
                }
            }
            ExtractionMessage::StartWorker => match start_worker(&_myself, &state.service).await {
                Ok(worker) => state.idle.push(worker),
                Err(error) => {
                    tracing::warn!(%error, "extraction worker did not start; retrying");
                    schedule_worker_start(&_myself, state);
                }
            },
        }
        state.dispatch();
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut ExtractionState,
    ) -> Result<(), ActorProcessingErr> {
        let (id, reason) = match event {
            SupervisionEvent::ActorFailed(cell, error) => (cell.get_id(), error.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (
                cell.get_id(),
                reason.unwrap_or_else(|| "stopped".to_owned()),
            ),
            _ => return Ok(()),
        };
        state.idle.retain(|worker| worker.get_id() != id);
        let Some((_, mut job)) = state.busy.remove(&id) else {
            return Ok(());
        };
        tracing::warn!(job = %job.id, %reason, "extraction worker failed");
        // The worker counted the attempt in the store; keep the queue's copy in step.
        job.attempts += 1;
        if job.attempts >= EXTRACT_JOB_MAX_ATTEMPTS {
            job.state = JobState::Failed;
            job.detail = Some(format!(
                "extraction failed {} times; last failure: {reason}",
                job.attempts
            ));
            job.updated_at = Utc::now();
            let service = state.service.clone();
            tokio::spawn(async move {
                if let Err(error) = service.put_job(job).await {
                    tracing::warn!(%error, "failed job not saved");
                }
            });
        } else {
            state.queue.push_front(job);
        }
        state.restarts += 1;
        schedule_worker_start(&myself, state);
        state.dispatch();
        Ok(())
    }
}

fn schedule_worker_start(myself: &ActorRef<ExtractionMessage>, state: &mut ExtractionState) {
    let delay = RESTART_BACKOFF_START
        .saturating_mul(2u32.saturating_pow(state.failures.min(16)))
        .min(RESTART_BACKOFF_MAX);
    state.failures += 1;
    myself.send_after(delay, || ExtractionMessage::StartWorker);
}

pub enum WorkerMessage {
    Run(ExtractJobRecord),
}

pub struct ExtractionWorker;

pub struct WorkerArgs {
    service: Memvault,
    supervisor: ActorRef<ExtractionMessage>,
}

impl Actor for ExtractionWorker {
    type Msg = WorkerMessage;
    type State = WorkerArgs;
    type Arguments = WorkerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: WorkerArgs,
    ) -> Result<WorkerArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: WorkerMessage,
        state: &mut WorkerArgs,
    ) -> Result<(), ActorProcessingErr> {
        let WorkerMessage::Run(job) = message;
        let finished = state.service.run_job(job).await;
        tracing::debug!(job = %finished.id, state = finished.state.as_str(), "extraction job finished");
        let _ = state.supervisor.cast(ExtractionMessage::Finished {
            worker: myself.get_id(),
        });
        Ok(())
    }
}
