//! Addresses of simulated pods, from `10.244.0.0/16`: each pod the node runs holds one no other
//! running pod holds, and keeps the one its status shows across restarts of the node while no
//! other pod has taken it. (A pod running as processes shares the machine's loopback address.)

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Mutex;

/// The first address of the range; pods get `.1` to `.254` of each of its 256 `/24`s.
const BASE: u32 = u32::from_be_bytes([10, 244, 0, 0]);
/// The number of addresses in the range.
const SIZE: u32 = 1 << 16;

/// The addresses held, by pod uid.
#[derive(Default)]
pub struct PodIps(Mutex<Pool>);

#[derive(Default)]
struct Pool {
    by_uid: HashMap<String, Ipv4Addr>,
    taken: HashSet<Ipv4Addr>,
    /// Where the search for a free address starts next: addresses are handed out in turn, so
    /// one a pod just gave up is not at once another pod's.
    next: u32,
}

impl PodIps {
    /// The address of the pod `uid`: the one it holds, else `shown` (the address its status
    /// shows) when that is in the range and free, else the next free one.
    pub fn assign(&self, uid: &str, shown: Option<&str>) -> String {
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ip) = pool.by_uid.get(uid) {
            return ip.to_string();
        }
        let wanted = shown.and_then(|s| s.parse::<Ipv4Addr>().ok()).filter(|ip| {
            let offset = u32::from(*ip).wrapping_sub(BASE);
            offset < SIZE && usable(offset) && !pool.taken.contains(ip)
        });
        let ip = match wanted {
            Some(ip) => ip,
            None => {
                let start = pool.next;
                let offset = (0..SIZE)
                    .map(|step| (start + step) % SIZE)
                    .find(|offset| {
                        usable(*offset) && !pool.taken.contains(&Ipv4Addr::from(BASE + offset))
                    })
                    // Every address taken (65,024 pods on one machine): share one rather than
                    // fail the pod.
                    .unwrap_or(1);
                pool.next = (offset + 1) % SIZE;
                Ipv4Addr::from(BASE + offset)
            }
        };
        pool.taken.insert(ip);
        pool.by_uid.insert(uid.to_owned(), ip);
        ip.to_string()
    }

    /// Gives the pod's address back.
    pub fn release(&self, uid: &str) {
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ip) = pool.by_uid.remove(uid) {
            pool.taken.remove(&ip);
        }
    }
}

/// Whether the address at `offset` is one a pod may get: not a `/24`'s `.0` or `.255`.
fn usable(offset: u32) -> bool {
    !matches!(offset % 256, 0 | 255)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pod_gets_its_own_address_and_keeps_it() {
        let ips = PodIps::default();
        let a = ips.assign("a", None);
        let b = ips.assign("b", None);
        assert_eq!((a.as_str(), b.as_str()), ("10.244.0.1", "10.244.0.2"));
        assert_eq!(ips.assign("a", Some("10.244.9.9")), a, "an address held is kept");
        let many: HashSet<String> = (0..600).map(|i| ips.assign(&format!("p{i}"), None)).collect();
        assert_eq!(many.len(), 600);
        assert!(!many.contains("10.244.1.0") && !many.contains("10.244.0.255"));
    }

    #[test]
    fn a_restarted_node_keeps_the_shown_address_unless_it_is_taken() {
        let ips = PodIps::default();
        assert_eq!(ips.assign("a", Some("10.244.7.7")), "10.244.7.7");
        assert_eq!(ips.assign("b", Some("10.244.7.7")), "10.244.0.1", "taken: the next free one");
        assert_eq!(ips.assign("c", Some("192.168.0.1")), "10.244.0.2", "outside the range");
        ips.release("a");
        assert_eq!(ips.assign("d", Some("10.244.7.7")), "10.244.7.7", "given back");
    }
}
