//! Reference model (written next).
