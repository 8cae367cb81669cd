//! The window's Sink: it records each event into the shared [`Transcript`]
//! and posts a wake-up; it never draws. A wake-up that is lost (or merged
//! with others) only makes a frame late: the next frame is drawn from the
//! transcript's state, which already holds every line.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use futures::future::BoxFuture;
use mm_ui::{AgentMode, Decision, Event, PlanReview, Sink, ToolInfo};
use tokio::sync::{Notify, oneshot};

use crate::transcript::{EntryKind, PendingPermission, ToolState, Transcript};

/// The id the plan's question goes by (it is no call's).
const PLAN_ID: &str = "exit_plan";

/// The transcript and the wake-up, shared by the Sink and the event loop.
#[derive(Debug, Default)]
pub struct Shared {
    transcript: Mutex<Transcript>,
    wake: Notify,
}

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared::default())
    }

    /// The transcript, locked. A panic elsewhere leaves plain data: go on.
    pub fn lock(&self) -> MutexGuard<'_, Transcript> {
        self.transcript
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Change the transcript and wake the event loop.
    pub fn update<R>(&self, f: impl FnOnce(&mut Transcript) -> R) -> R {
        let r = f(&mut self.lock());
        self.wake.notify_one();
        r
    }

    /// Wait for the next change (a permit is kept if none is waiting, so a
    /// change between two waits is never missed).
    pub async fn changed(&self) {
        self.wake.notified().await;
    }

    /// Answer the pending permission request, if any; true when answered.
    pub fn answer(&self, decision: Decision) -> bool {
        self.update(|t| match t.permission.take() {
            Some(mut p) => {
                let state = match decision {
                    Decision::AllowOnce | Decision::AllowAlways => ToolState::Pending,
                    Decision::Reject | Decision::Cancelled => ToolState::Failed,
                };
                t.set_tool_state(&p.id, state, Instant::now());
                if let Some(why) = p.reason.take().filter(|w| !w.trim().is_empty())
                    && decision == Decision::Reject
                {
                    t.reasons.insert(p.id.clone(), why);
                }
                if let Some(reply) = p.reply.take() {
                    let _ = reply.send(decision);
                }
                true
            }
            None => false,
        })
    }
}

/// The Sink a window turn runs with.
#[derive(Debug, Clone)]
pub struct WindowSink {
    shared: Arc<Shared>,
}

impl WindowSink {
    pub fn new(shared: Arc<Shared>) -> WindowSink {
        WindowSink { shared }
    }
}

/// Clears the prompt when the permission future is dropped unanswered
/// (the turn was cancelled while asking).
struct ClearPrompt {
    shared: Arc<Shared>,
    id: String,
}

impl Drop for ClearPrompt {
    fn drop(&mut self) {
        self.shared.update(|t| {
            if t.permission.as_ref().is_some_and(|p| p.id == self.id) {
                t.permission = None;
            }
        });
    }
}

impl Sink for WindowSink {
    fn event(&self, event: Event) {
        let now = Instant::now();
        self.shared.update(|t| t.apply(event, now));
    }

    fn rejection_reason(&self, id: &str) -> Option<String> {
        self.shared.update(|t| t.reasons.remove(id))
    }

    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        let (tx, rx) = oneshot::channel();
        let shared = self.shared.clone();
        shared.update(|t| {
            // The plan is read in the transcript, drawn as Markdown.
            t.push(EntryKind::Answer(plan.to_owned()));
            t.permission = Some(PendingPermission {
                id: PLAN_ID.into(),
                tool: "exit_plan".into(),
                title: "carry out this plan?".into(),
                diff: None,
                reason: None,
                reply: Some(tx),
                plan: true,
            });
        });
        let guard = ClearPrompt {
            shared,
            id: PLAN_ID.into(),
        };
        Box::pin(async move {
            let decision = rx.await.unwrap_or(Decision::Cancelled);
            let review = match decision {
                Decision::AllowOnce => PlanReview::Proceed(AgentMode::Ask),
                Decision::AllowAlways => PlanReview::Proceed(AgentMode::Allow),
                Decision::Reject => {
                    PlanReview::Stay(guard.shared.update(|t| t.reasons.remove(PLAN_ID)))
                }
                Decision::Cancelled => PlanReview::Cancelled,
            };
            drop(guard);
            review
        })
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        let (tx, rx) = oneshot::channel();
        let shared = self.shared.clone();
        shared.update(|t| {
            t.set_tool_state(&info.id, ToolState::Asking, Instant::now());
            t.permission = Some(PendingPermission {
                id: info.id.clone(),
                tool: info.tool.clone(),
                title: info.title.clone(),
                diff: info
                    .change
                    .as_ref()
                    .map(|c| c.diff.clone())
                    .filter(|d| !d.is_empty()),
                reason: None,
                reply: Some(tx),
                plan: false,
            });
        });
        let guard = ClearPrompt {
            shared,
            id: info.id.clone(),
        };
        Box::pin(async move {
            let decision = rx.await.unwrap_or(Decision::Cancelled);
            if matches!(decision, Decision::AllowOnce | Decision::AllowAlways) {
                guard.shared.update(|t| t.approved(&guard.id));
            }
            drop(guard);
            decision
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_ui::ToolKind;
    use std::time::Duration;

    fn info() -> ToolInfo {
        ToolInfo {
            id: "c1".into(),
            tool: "bash".into(),
            family: mm_ui::ToolFamily::Command,
            echoes: true,
            title: "rm -rf build".into(),
            kind: ToolKind::Execute,
            input: serde_json::json!({"command": "rm -rf build"}),
            locations: vec![],
            change: None,
        }
    }

    #[tokio::test]
    async fn events_land_in_the_transcript_and_wake_the_loop() {
        let shared = Shared::new();
        let sink = WindowSink::new(shared.clone());
        sink.event(Event::Text {
            text: "hello".into(),
        });
        // The permit was stored: this returns at once.
        tokio::time::timeout(Duration::from_secs(5), shared.changed())
            .await
            .unwrap();
        assert_eq!(shared.lock().len(), 1);
    }

    #[tokio::test]
    async fn many_events_and_one_wake_up_lose_no_line() {
        let shared = Shared::new();
        let sink = WindowSink::new(shared.clone());
        let writer = std::thread::spawn(move || {
            for i in 0..1000 {
                sink.event(Event::Notice {
                    text: format!("line {i}"),
                });
            }
        });
        writer.join().unwrap();
        // One wake-up for a thousand events: the state holds them all.
        tokio::time::timeout(Duration::from_secs(5), shared.changed())
            .await
            .unwrap();
        let t = shared.lock();
        assert_eq!(t.len(), 1000);
        assert_eq!(
            t.entries()[999].kind,
            crate::transcript::EntryKind::Notice("line 999".into())
        );
    }

    #[tokio::test]
    async fn the_prompt_waits_for_the_answer() {
        let shared = Shared::new();
        let sink = WindowSink::new(shared.clone());
        sink.event(Event::ToolStart { info: info() });
        let asking = {
            let sink = sink.clone();
            tokio::spawn(async move { sink.permission(&info()).await })
        };
        // Wait (bounded) until the prompt is up.
        tokio::time::timeout(Duration::from_secs(5), async {
            while shared.lock().permission.is_none() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(
            shared.lock().permission.as_ref().unwrap().title,
            "rm -rf build"
        );
        assert!(shared.answer(Decision::Reject));
        let d = tokio::time::timeout(Duration::from_secs(5), asking)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(d, Decision::Reject);
        assert!(shared.lock().permission.is_none());
        assert!(
            !shared.answer(Decision::AllowOnce),
            "nothing left to answer"
        );
    }

    #[tokio::test]
    async fn a_dropped_request_takes_its_prompt_away() {
        let shared = Shared::new();
        let sink = WindowSink::new(shared.clone());
        let i = info();
        let fut = sink.permission(&i);
        assert!(shared.lock().permission.is_some());
        drop(fut);
        assert!(shared.lock().permission.is_none());
    }
}
