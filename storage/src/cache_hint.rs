//! A hint to the processor's cache, for loops whose next reads the hardware prefetcher
//! cannot foresee (rows at gaps, fields at varying offsets).

/// Asks the processor to load the cache line holding `value`.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of every x86_64 target, and a prefetch only hints the cache:
        // it reads nothing and cannot fault (the address is a live value anyway).
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
