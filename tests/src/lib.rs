//! End-to-end tests of the built binaries live in `tests/tests/`.
