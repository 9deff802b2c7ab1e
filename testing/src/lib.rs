//! `ordo-testing`: what a test of code built on ordo needs, as a public crate.
//!
//! - [`model`]: a pure reference model of ordo's lifecycle and handle rules over several
//!   platforms. For each operation it predicts the outcome the runtime must give (the new object,
//!   or the specific error code), so a state-machine property test (`proptest-state-machine`)
//!   can drive the real runtime and the model side by side.
//! - [`scripted`]: [`ScriptedBackend`], a backend that touches no memory, counts live objects per
//!   kind, catches double releases and calls outside init, and fails any chosen call with any
//!   error (fault injection), including "already released by the driver".
//!
//! Pair them with `ordo_core::OwnedRuntime` (or `ordo::OwnedRuntime`): a fresh runtime per test
//! case, torn down when dropped. `ordo/examples/05_property_test.rs` is a complete example; the
//! project's own use is `tests/tests/model.rs`.
//!
//! `no_std` like the core (the model and the scripted backend allocate nothing).
#![cfg_attr(not(test), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

pub mod model;
pub mod scripted;

pub use scripted::{ScriptedBackend, ScriptedObject};
