//! A sink that records every event and answers permission questions as
//! the test scripted them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_types::{Decision, Event, Sink, ToolInfo};

/// What to do on each event besides recording it.
type Hook = Box<dyn Fn(&Event) + Send + Sync>;

/// Records every event; answers permission with the scripted answers in
/// order, then with the standing answer (or fails the test when there is
/// none: asked more often than the test expected).
pub struct Recorder {
    events: Mutex<Vec<Event>>,
    answers: Mutex<VecDeque<Decision>>,
    standing: Option<Decision>,
    asked: Mutex<Vec<ToolInfo>>,
    hook: Option<Hook>,
}

impl Recorder {
    fn make(answers: &[Decision], standing: Option<Decision>, hook: Option<Hook>) -> Arc<Recorder> {
        Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            answers: Mutex::new(answers.iter().copied().collect()),
            standing,
            asked: Mutex::new(Vec::new()),
            hook,
        })
    }

    /// A sink that allows every call once.
    pub fn new() -> Arc<Recorder> {
        Recorder::always(Decision::AllowOnce)
    }

    /// A sink that answers every permission question with `answer`.
    pub fn always(answer: Decision) -> Arc<Recorder> {
        Recorder::make(&[], Some(answer), None)
    }

    /// A sink that answers with `answers` in order and fails the test when
    /// asked once more.
    pub fn answering(answers: &[Decision]) -> Arc<Recorder> {
        Recorder::make(answers, None, None)
    }

    /// A sink that allows every call once and runs `hook` on each event
    /// as it arrives (to cancel a turn at a chosen moment, say).
    pub fn with_hook(hook: impl Fn(&Event) + Send + Sync + 'static) -> Arc<Recorder> {
        Recorder::make(&[], Some(Decision::AllowOnce), Some(Box::new(hook)))
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// Every event so far, leaving none recorded.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// The answer's text: every `Text` event, joined.
    pub fn text(&self) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Text { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The text of every `Notice` event.
    pub fn notices(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Notice { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The calls of every `ToolStart` event.
    pub fn starts(&self) -> Vec<ToolInfo> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::ToolStart { info } => Some(info),
                _ => None,
            })
            .collect()
    }

    /// The calls permission was asked for, in order.
    pub fn asked(&self) -> Vec<ToolInfo> {
        self.asked.lock().unwrap().clone()
    }
}

impl Sink for Recorder {
    fn event(&self, event: Event) {
        if let Some(hook) = &self.hook {
            hook(&event);
        }
        self.events.lock().unwrap().push(event);
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        self.asked.lock().unwrap().push(info.clone());
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .or(self.standing)
            .expect("permission asked more often than the test expected");
        Box::pin(async move { answer })
    }
}
