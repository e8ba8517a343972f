//! What the host offers llama.cpp: its physical cores, and a seed for
//! sampled requests.

/// Physical cores (distinct core ids in `/proc/cpuinfo`), at most the CPUs
/// this process may use; the latter where cpuinfo is unavailable.
pub(crate) fn physical_cores() -> u32 {
    let usable = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let physical = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|info| count_cores(&info));
    let cores = physical.map_or(usable, |p| p.min(usable)).max(1);
    u32::try_from(cores).unwrap_or(u32::MAX)
}

/// Counts distinct (physical id, core id) pairs in cpuinfo text.
fn count_cores(cpuinfo: &str) -> Option<usize> {
    let mut cores = std::collections::BTreeSet::new();
    for block in cpuinfo.split("\n\n") {
        let field = |name: &str| {
            block.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_owned())
            })
        };
        if let Some(core) = field("core id") {
            cores.insert((field("physical id").unwrap_or_default(), core));
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

/// A seed for sampled (non-greedy) requests.
pub(crate) fn seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() ^ (d.as_secs() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_are_counted_once_per_core_not_per_hyperthread() {
        let info = "processor : 0\nphysical id : 0\ncore id : 0\n\n\
                    processor : 1\nphysical id : 0\ncore id : 0\n\n\
                    processor : 2\nphysical id : 0\ncore id : 1\n\n\
                    processor : 3\nphysical id : 1\ncore id : 0\n";
        assert_eq!(count_cores(info), Some(3));
        assert_eq!(count_cores("processor : 0\n"), None);
        assert!(physical_cores() >= 1);
    }
}
