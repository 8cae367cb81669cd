//! mm-store: per-project session files on disk, written whole and
//! atomically. It never knows a front end.
