//! What process pods and the machine use, read from `/proc`, for the resource metrics API
//! (`kubectl top`) and the nodes' kubelet statistics: CPU as the rate between two readings and
//! as the total used, memory as resident bytes now.
//!
//! A container process leads a process group of its own, so a container's usage is its
//! group's: the process and everything it started. Readings are taken when metrics are asked
//! for, not in the background: an idle `keelson up` reads nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;

/// The shortest time between the two readings a CPU rate is computed from.
const MIN_WINDOW: Duration = Duration::from_secs(1);
/// Readings older than this are taken again, so that a rate tells about now.
const MAX_AGE: Duration = Duration::from_secs(15);

/// One process group's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupReading {
    /// CPU time used, in clock ticks.
    pub ticks: u64,
    /// Resident memory, in pages.
    pub pages: u64,
}

/// One reading of `/proc`.
#[derive(Debug)]
pub struct Reading {
    at: Instant,
    time: Timestamp,
    groups: HashMap<i32, GroupReading>,
    /// The machine's busy CPU time, in clock ticks summed over its CPUs.
    machine_ticks: u64,
    /// The machine's memory in use (total less available), in bytes.
    machine_memory: u64,
}

/// Usage over the time between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// CPU, in billionths of a core.
    pub nanocores: u64,
    /// Memory, in bytes.
    pub memory: u64,
    /// CPU time used in all by the end of the window, in nanoseconds.
    pub cpu_nanoseconds: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            nanocores: self.nanocores + other.nanocores,
            memory: self.memory + other.memory,
            cpu_nanoseconds: self.cpu_nanoseconds + other.cpu_nanoseconds,
        }
    }
}

/// Two readings: a window of time, and what was used in it.
pub struct Window {
    earlier: Arc<Reading>,
    later: Arc<Reading>,
    ticks_per_second: u64,
    page_size: u64,
}

impl Window {
    /// When the window ended.
    pub fn timestamp(&self) -> Timestamp {
        self.later.time
    }

    /// How long the window is.
    pub fn length(&self) -> Duration {
        self.later.at.duration_since(self.earlier.at)
    }

    /// The usage of the process group `leader` leads; none if it did not run the whole window.
    pub fn group(&self, leader: i32) -> Option<Usage> {
        let (before, after) = (self.earlier.groups.get(&leader)?, self.later.groups.get(&leader)?);
        Some(Usage {
            nanocores: self.rate(after.ticks.saturating_sub(before.ticks)),
            memory: after.pages * self.page_size,
            cpu_nanoseconds: self.nanoseconds(after.ticks),
        })
    }

    /// The whole machine's usage.
    pub fn machine(&self) -> Usage {
        let busy = self.later.machine_ticks.saturating_sub(self.earlier.machine_ticks);
        Usage {
            nanocores: self.rate(busy),
            memory: self.later.machine_memory,
            cpu_nanoseconds: self.nanoseconds(self.later.machine_ticks),
        }
    }

    /// Ticks used in the window as billionths of a core.
    fn rate(&self, ticks: u64) -> u64 {
        let nanos = self.length().as_nanos().max(1);
        let used = u128::from(self.nanoseconds(ticks));
        u64::try_from(used * 1_000_000_000 / nanos).unwrap_or(u64::MAX)
    }

    /// Ticks as nanoseconds of CPU time.
    fn nanoseconds(&self, ticks: u64) -> u64 {
        let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second.max(1));
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }
}

/// Keeps the last two readings and takes new ones when asked for usage.
#[derive(Default)]
pub struct Sampler {
    readings: tokio::sync::Mutex<Option<(Arc<Reading>, Arc<Reading>)>>,
}

impl Sampler {
    /// A window ending now or less than a second ago. Without a recent reading, this takes two,
    /// a second apart.
    pub async fn window(&self) -> Window {
        let mut readings = self.readings.lock().await;
        let next = match readings.take() {
            Some((earlier, later)) if later.at.elapsed() < MIN_WINDOW => (earlier, later),
            Some((_, later)) if later.at.elapsed() <= MAX_AGE => (later, read().await),
            _ => {
                let earlier = read().await;
                tokio::time::sleep(MIN_WINDOW).await;
                (earlier, read().await)
            }
        };
        *readings = Some(next.clone());
        Window {
            earlier: next.0,
            later: next.1,
            ticks_per_second: rustix::param::clock_ticks_per_second(),
            page_size: rustix::param::page_size() as u64,
        }
    }
}

/// Reads `/proc` off the async workers.
async fn read() -> Arc<Reading> {
    let reading = tokio::task::spawn_blocking(read_proc).await;
    Arc::new(reading.unwrap_or_else(|_| Reading {
        at: Instant::now(),
        time: Timestamp::now(),
        groups: HashMap::new(),
        machine_ticks: 0,
        machine_memory: 0,
    }))
}

fn read_proc() -> Reading {
    let supervisor = supervisor_name();
    let mut groups: HashMap<i32, GroupReading> = HashMap::new();
    let at = Instant::now();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let is_pid =
            entry.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if !is_pid {
            continue;
        }
        // A process that ended meanwhile has no stat to read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some((group, reading)) = process_stat(&stat, &supervisor) {
            let total = groups.entry(group).or_default();
            total.ticks += reading.ticks;
            total.pages += reading.pages;
        }
    }
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Reading {
        at,
        time: Timestamp::now(),
        groups,
        machine_ticks: busy_ticks(&stat).unwrap_or(0),
        machine_memory: memory_in_use(&meminfo).unwrap_or(0),
    }
}

/// A process's group and its CPU ticks and resident pages, from `/proc/<pid>/stat`; `None` for
/// a process named `supervisor` that leads its group: a container's supervisor, which its
/// program's usage leaves out, as a container runtime's shim is not the container's.
fn process_stat(stat: &str, supervisor: &str) -> Option<(i32, GroupReading)> {
    // The command name may hold spaces and parentheses: fields start after the last `)`.
    let (head, rest) = stat.rsplit_once(')')?;
    let (pid, name) = head.split_once(" (")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields counted from `state` (the third of the line): pgrp 5, utime 14, stime 15, rss 24.
    let field = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    let group = field(5)?;
    if name == supervisor && pid.trim().parse::<i64>().ok() == Some(group) {
        return None;
    }
    let ticks = field(14)? + field(15)?;
    let pages = field(24)?.max(0);
    Some((i32::try_from(group).ok()?, GroupReading { ticks: ticks as u64, pages: pages as u64 }))
}

/// The name `/proc` gives the supervisor: this executable's file name, cut to the kernel's 15
/// bytes.
fn supervisor_name() -> String {
    let exe = std::env::current_exe().ok();
    let name = exe.as_deref().and_then(|e| e.file_name()).and_then(|n| n.to_str());
    name.unwrap_or_default().bytes().take(15).map(char::from).collect()
}

/// The machine's busy CPU ticks from `/proc/stat`: everything but idle and I/O wait.
pub fn busy_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is within user already).
    let total: u64 = values.iter().take(8).sum();
    Some(total - values.get(3)? - values.get(4).unwrap_or(&0))
}

/// Memory in use from `/proc/meminfo`: total less available, in bytes.
pub fn memory_in_use(meminfo: &str) -> Option<u64> {
    let kib = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(kib("MemTotal:")?.saturating_sub(kib("MemAvailable:")?) * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_stat_gives_its_group_cpu_and_memory() {
        let stat = "4242 (my (odd) cmd) S 1 4240 4240 0 -1 4194304 100 0 0 0 \
                    70 30 0 0 20 0 1 0 12345 1000000 250 18446744073709551615";
        let reading = Some((4240, GroupReading { ticks: 100, pages: 250 }));
        assert_eq!(process_stat(stat, "keelson"), reading);
        assert_eq!(process_stat("1 (x) S 0", "keelson"), None);
        // The supervisor leading the group is left out; a process of that name that does not
        // lead its group, or the leader of another name, counts.
        let leader =
            |name: &str| stat.replacen("4242 (my (odd) cmd)", &format!("4240 ({name})"), 1);
        assert_eq!(process_stat(&leader("keelson"), "keelson"), None);
        assert_eq!(process_stat(&leader("sh"), "keelson"), reading);
        assert_eq!(process_stat(&stat.replacen("my (odd) cmd", "keelson", 1), "keelson"), reading);
    }

    #[test]
    fn machine_figures_leave_out_idle_time_and_available_memory() {
        let stat = "cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n";
        assert_eq!(busy_ticks(stat), Some(160));
        let meminfo = "MemTotal:       2048 kB\nMemFree:         100 kB\nMemAvailable:    512 kB\n";
        assert_eq!(memory_in_use(meminfo), Some(1536 * 1024));
    }

    #[test]
    fn a_window_turns_ticks_into_cores() {
        let reading = |at: Instant, ticks: u64, pages: u64| Reading {
            at,
            time: Timestamp::UNIX_EPOCH,
            groups: HashMap::from([(7, GroupReading { ticks, pages })]),
            machine_ticks: ticks * 4,
            machine_memory: 1 << 30,
        };
        let start = Instant::now();
        let window = Window {
            earlier: Arc::new(reading(start, 100, 10)),
            later: Arc::new(reading(start + Duration::from_secs(2), 150, 20)),
            ticks_per_second: 100,
            page_size: 4096,
        };
        // 50 ticks of 10 ms in 2 s: a quarter of a core.
        let group =
            Usage { nanocores: 250_000_000, memory: 20 * 4096, cpu_nanoseconds: 1_500_000_000 };
        assert_eq!(window.group(7), Some(group));
        assert_eq!(window.group(8), None, "a group not seen in both readings has no usage");
        let machine =
            Usage { nanocores: 1_000_000_000, memory: 1 << 30, cpu_nanoseconds: 6_000_000_000 };
        assert_eq!(window.machine(), machine);
    }
}
