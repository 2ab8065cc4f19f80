//! The process runtime of the local node: containers as local processes, and their log files.

pub mod attach;
pub mod logs;
pub mod process;
pub mod supervisor;
pub mod usage;
