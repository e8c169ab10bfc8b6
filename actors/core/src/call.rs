//! Calling an actor with a timeout, its failures mapped to the crate's errors: a mailbox
//! that is gone becomes `Restarting` or `ActorStopped` (503), a timeout `ActorTimeout` (504).

use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorRef, RpcReplyPort};

use crate::error::{Error, Result};

pub async fn call_actor<M, T>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<Result<T>>) -> M,
    timeout: Duration,
    what: &str,
) -> Result<T>
where
    M: ractor::Message,
    T: Send + 'static,
{
    match actor.call(build, Some(timeout)).await {
        Ok(CallResult::Success(result)) => result,
        Ok(CallResult::Timeout) => Err(Error::ActorTimeout(what.to_owned())),
        Ok(CallResult::SenderError) => Err(Error::ActorStopped {
            what: what.to_owned(),
        }),
        Err(_) => Err(Error::Restarting {
            what: what.to_owned(),
        }),
    }
}

/// Runs blocking store work off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> memvault_storage::error::Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => Ok(result?),
        Err(join_error) => Err(Error::TaskFailed {
            task: "storage task",
            reason: join_error.to_string(),
        }),
    }
}
