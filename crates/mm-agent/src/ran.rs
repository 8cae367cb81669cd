//! Which calls actually ran: the recap's counters (`⚙ 2 command(s)`) count
//! only those, not calls rejected, refused or never started. The toolbox
//! says a call runs with `ToolRunning` right before it starts it; this sink
//! notes those ids on their way to the front end's sink.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_ui::{Decision, Event, PlanReview, Sink, ToolInfo};

/// A sink that passes everything on to `inner` and keeps the ids of the
/// calls that started running.
pub(crate) struct RanSink {
    inner: Arc<dyn Sink>,
    ran: Mutex<HashSet<String>>,
}

impl RanSink {
    pub(crate) fn new(inner: Arc<dyn Sink>) -> Arc<RanSink> {
        Arc::new(RanSink {
            inner,
            ran: Mutex::new(HashSet::new()),
        })
    }

    /// Whether call `id` started running.
    pub(crate) fn ran(&self, id: &str) -> bool {
        self.ran
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(id)
    }
}

impl Sink for RanSink {
    fn event(&self, event: Event) {
        if let Event::ToolRunning { id } = &event {
            self.ran
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone());
        }
        self.inner.event(event);
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        self.inner.permission(info)
    }

    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        self.inner.cannot_ask(info)
    }

    fn rejection_reason(&self, id: &str) -> Option<String> {
        self.inner.rejection_reason(id)
    }

    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        self.inner.review_plan(plan)
    }
}
