//! The conversation types, from the vocabulary floor (mm-types): the
//! engine turns them into each provider's JSON and back.

pub use mm_types::message::*;
