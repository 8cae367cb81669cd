//! The Sink contract and its events, from the vocabulary floor
//! (mm-types); mm-ui renders them for people.

pub use mm_types::event::*;
