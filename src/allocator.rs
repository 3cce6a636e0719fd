//! Allocator settings for programs that run queries (the command line, the benchmark
//! runners), not for the library: a program embedding morsel keeps its own.
//!
//! glibc's malloc hands large blocks back to the system when they are freed (each one is
//! its own mapping past a threshold, and the heap's free top is trimmed), so the next query
//! maps and faults the same memory in again; on the reference VM a page fault costs enough
//! that a join's fresh 24 MB index took 25-50 ms to touch. [`retain_freed_memory`] keeps
//! freed memory for reuse instead: TPC-H in memory, one query per process as the peers'
//! harness runs it, Q5 80-85 -> 60-65 ms, Q10 125-140 -> 111-116, Q21 163 -> 140-145. The
//! process's memory then stays at its peak until it exits.

/// Keeps freed memory in the process for reuse (glibc on Linux; elsewhere nothing).
pub fn retain_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        /// Free memory at the heap's top kept before trimming (bytes).
        const M_TRIM_THRESHOLD: i32 = -1;
        /// Most blocks served by their own mapping (0: none, all from the heaps).
        const M_MMAP_MAX: i32 = -4;
        // SAFETY: mallopt only sets glibc malloc's parameters (it takes malloc's own lock);
        // both values are in range, and a failed call (0) leaves the defaults in force.
        unsafe {
            mallopt(M_MMAP_MAX, 0);
            mallopt(M_TRIM_THRESHOLD, i32::MAX);
        }
    }
}
