//! Selecting with the processor's compress and bit-extract instructions, where it has them;
//! elsewhere each caller keeps its portable loop.
//!
//! - [`keep_rows`]: the rows of 8- or 4-byte values a mask selects, by AVX-512's compress
//!   on 256-bit vectors (four or eight values a step, no branch or store per row). The
//!   512-bit form was as fast on suite `filter` and read 2-4% slower over TPC-H in memory
//!   (perhaps the lower clock some Xeons run wide vectors at; not measured).
//! - [`keep_bytes`]: the bytes a mask selects (one-byte text: flags and codes), 64 a step
//!   by AVX-512 VBMI2's byte compress.
//! - [`set_positions`]: the row numbers of a mask's set bits, sixteen compressed a step.
//! - [`keep_bits`]: the bits a mask selects, 64 at a time by BMI2's `pext`.

use crate::bitmap::{Bitmap, BitmapBuilder};

/// The values of `src` whose bit in `mask` is set (`kept` of them), in order; `None` when
/// the values are not 8 or 4 bytes wide or the processor lacks AVX-512F or VL.
pub(crate) fn keep_rows<T: Copy>(src: &[T], mask: &Bitmap, kept: usize) -> Option<Vec<T>> {
    #[cfg(target_arch = "x86_64")]
    {
        let width = std::mem::size_of::<T>();
        if (width == 8 || width == 4)
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // Each step stores 32 bytes of lanes, of which only the selected are kept.
            let mut out = Vec::with_capacity(kept + 8);
            // SAFETY: the processor has AVX-512F and VL (checked just above); `T` is 8 or 4
            // bytes, as each function asks.
            unsafe {
                match width {
                    8 => compress_avx512(src, mask, &mut out),
                    _ => compress32_avx512(src, mask, &mut out),
                }
            };
            return Some(out);
        }
    }
    let _ = (src, mask, kept);
    None
}

/// Appends the selected values of `src` (8 bytes each) to the empty `out`, which must have
/// room for all of them and four more: four values a step (see [`compress_lanes`]). The
/// compress straight to memory (`vpcompressq` with a memory operand) was slower on this
/// project's Zen 5: copying the survivors of suite `filter` at 10M rows took 18-21 ms of
/// CPU, 12-14 by register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn compress_avx512<T: Copy>(src: &[T], mask: &Bitmap, out: &mut Vec<T>) {
    use std::arch::x86_64::{_mm256_loadu_epi64, _mm256_maskz_compress_epi64, _mm256_storeu_epi64};
    assert_eq!(std::mem::size_of::<T>(), 8, "compress moves 8-byte lanes");
    let step = |from: *const T, to: *mut T, bits: u8| {
        // SAFETY: `compress_lanes` hands a source with four values to read and a
        // destination with room for four; the processor has AVX-512F and VL (this
        // function's contract).
        unsafe {
            let v = _mm256_loadu_epi64(from.cast());
            _mm256_storeu_epi64(to.cast(), _mm256_maskz_compress_epi64(bits, v));
        }
    };
    // SAFETY: the step stores four 8-byte lanes, whole values of `T` (8 bytes, `Copy`)
    // copied bit for bit or zeros.
    unsafe { compress_lanes(src, mask, out, 4, step) }
}

/// [`compress_avx512`] for 4-byte values (dates, INTEGER), eight a step; `out` must have
/// room for all selected values and eight more.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn compress32_avx512<T: Copy>(src: &[T], mask: &Bitmap, out: &mut Vec<T>) {
    use std::arch::x86_64::{_mm256_loadu_epi32, _mm256_maskz_compress_epi32, _mm256_storeu_epi32};
    assert_eq!(std::mem::size_of::<T>(), 4, "compress moves 4-byte lanes");
    let step = |from: *const T, to: *mut T, bits: u8| {
        // SAFETY: `compress_lanes` hands a source with eight values to read and a
        // destination with room for eight; the processor has AVX-512F and VL (this
        // function's contract).
        unsafe {
            let v = _mm256_loadu_epi32(from.cast());
            _mm256_storeu_epi32(to.cast(), _mm256_maskz_compress_epi32(bits, v));
        }
    };
    // SAFETY: the step stores eight 4-byte lanes, whole values of `T` (4 bytes, `Copy`)
    // copied bit for bit or zeros.
    unsafe { compress_lanes(src, mask, out, 8, step) }
}

/// Appends the values of `src` whose bit in `mask` is set to the empty `out`, which must
/// have room for all of them and `lanes` more (asserted as it goes). Each step hands
/// `step` the next `lanes` values, a place in `out` and their bits of the mask; `step`
/// compresses the selected values into a register and stores all `lanes` lanes there,
/// the selected packed low (the lanes past them are overwritten by the next step, or
/// spare). The values past the last whole step of a word are copied one by one.
///
/// # Safety
/// `step` must write at most `lanes` values at the place it is given, each a value read
/// from the `lanes` it is handed or a zero bit pattern valid for `T`; `lanes` is at most 8.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn compress_lanes<T: Copy>(
    src: &[T],
    mask: &Bitmap,
    out: &mut Vec<T>,
    lanes: usize,
    step: impl Fn(*const T, *mut T, u8),
) {
    assert!(out.is_empty(), "values are written from the start");
    let room = out.capacity();
    let dst = out.as_mut_ptr();
    let lane_bits = (1u64 << lanes) - 1;
    let mut n = 0usize;
    for wi in 0..mask.word_count() {
        let m = mask.word(wi);
        let base = wi * 64;
        let rows = &src[base..(base + 64).min(src.len())];
        let full = rows.len() / lanes;
        assert!(
            n + m.count_ones() as usize + lanes <= room,
            "more rows selected than counted"
        );
        for k in 0..full {
            let bits = ((m >> (lanes * k)) & lane_bits) as u8;
            // SAFETY: `rows[lanes * k..][..lanes]` is in bounds (k < rows.len() / lanes), and
            // `dst + n` has room for `lanes` values: `n` is at most the values kept before
            // this word plus the word's count, so the lanes lie within that plus `lanes`
            // (asserted above). What `step` writes there is the caller's contract.
            let (from, to) = unsafe { (rows.as_ptr().add(lanes * k), dst.add(n)) };
            step(from, to, bits);
            n += bits.count_ones() as usize;
        }
        for (j, &v) in rows.iter().enumerate().skip(lanes * full) {
            if (m >> j) & 1 == 1 {
                // SAFETY: within the word's count (asserted above).
                unsafe { dst.add(n).write(v) };
                n += 1;
            }
        }
    }
    // SAFETY: the first `n` values were all written above (by `step`, selected values
    // packed low, or one by one), within capacity.
    unsafe { out.set_len(n) };
}

/// The bytes of `src` whose bit in `mask` is set (`kept` of them), in order; `None` when the
/// processor lacks AVX-512 VBMI2 or BW.
pub(crate) fn keep_bytes(src: &[u8], mask: &Bitmap, kept: usize) -> Option<Vec<u8>> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vbmi2")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            // Each step stores 64 bytes, of which only the selected are kept.
            let mut out = Vec::with_capacity(kept + 64);
            // SAFETY: the processor has AVX-512 VBMI2 and BW (checked just above).
            unsafe { compress_bytes_avx512(src, mask, &mut out) };
            return Some(out);
        }
    }
    let _ = (src, mask, kept);
    None
}

/// Appends the selected bytes of `src` to the empty `out`, which must have room for all of
/// them and 64 more (asserted as it goes): a word of the mask a step, its 64 bytes loaded
/// (past the end of `src`, masked off), compressed in a register and stored whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
unsafe fn compress_bytes_avx512(src: &[u8], mask: &Bitmap, out: &mut Vec<u8>) {
    use std::arch::x86_64::{
        _mm512_maskz_compress_epi8, _mm512_maskz_loadu_epi8, _mm512_storeu_epi8,
    };
    assert!(out.is_empty(), "bytes are written from the start");
    assert_eq!(mask.len(), src.len(), "a bit for every byte");
    let room = out.capacity();
    let dst = out.as_mut_ptr();
    let mut n = 0usize;
    for wi in 0..mask.word_count() {
        let base = wi * 64;
        let rows = (src.len() - base).min(64);
        let present = if rows == 64 {
            u64::MAX
        } else {
            (1u64 << rows) - 1
        };
        let m = mask.word(wi) & present;
        assert!(
            n + m.count_ones() as usize + 64 <= room,
            "more bytes selected than counted"
        );
        // SAFETY: the masked load reads only the `rows` bytes of `src` from `base` (the
        // others are masked off and cannot fault); the store writes 64 bytes at `dst + n`,
        // where `n` is at most the bytes kept before this word, so within the room for all
        // kept bytes and 64 more (asserted above).
        unsafe {
            let v = _mm512_maskz_loadu_epi8(present, src.as_ptr().add(base).cast());
            _mm512_storeu_epi8(dst.add(n).cast(), _mm512_maskz_compress_epi8(m, v));
        }
        n += m.count_ones() as usize;
    }
    // SAFETY: the first `n` bytes were all written above, within capacity.
    unsafe { out.set_len(n) };
}

/// The positions of `mask`'s set bits (`kept` of them), in increasing order; `None` when the
/// processor lacks AVX-512F.
pub(crate) fn set_positions(mask: &Bitmap, kept: usize) -> Option<Vec<u32>> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // Each step stores sixteen lanes, of which only the selected are kept.
            let mut out = Vec::with_capacity(kept + 16);
            // SAFETY: the processor has AVX-512F (checked just above).
            unsafe { positions_avx512(mask, &mut out) };
            return Some(out);
        }
    }
    let _ = (mask, kept);
    None
}

/// Appends the positions of `mask`'s set bits to the empty `out`, which must have room for
/// all of them and sixteen more (asserted as it goes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn positions_avx512(mask: &Bitmap, out: &mut Vec<u32>) {
    assert!(out.is_empty(), "positions are written from the start");
    let room = out.capacity();
    let dst = out.as_mut_ptr();
    let mut n = 0usize;
    for wi in 0..mask.word_count() {
        // Bits past the mask's length read as clear, so no position reaches past it.
        let m = mask.word(wi);
        if m == 0 {
            continue;
        }
        assert!(
            n + m.count_ones() as usize + 16 <= room,
            "more positions than counted"
        );
        // SAFETY: the processor has AVX-512F (this function's contract); `dst + n` has
        // room for the word's positions and sixteen more (asserted above).
        n += unsafe { word_positions(dst.add(n), (wi * 64) as u32, m) };
    }
    // SAFETY: the first `n` values were written above, within capacity.
    unsafe { out.set_len(n) };
}

/// Writes `base + j` for each set bit `j` of `bits` at `dst`, in order, and returns how
/// many: sixteen bits a step, each compress storing all sixteen lanes with the selected
/// positions packed low (the lanes past them are overwritten by the next step, or spare).
///
/// # Safety
/// The processor must have AVX-512F, and `dst` be valid for writes of
/// `bits.count_ones() + 16` `u32`s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn word_positions(dst: *mut u32, base: u32, bits: u64) -> usize {
    use std::arch::x86_64::{
        _mm512_add_epi32, _mm512_maskz_compress_epi32, _mm512_set1_epi32, _mm512_setr_epi32,
        _mm512_storeu_epi32,
    };
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut at = 0usize;
    for k in 0..4 {
        let quarter = (bits >> (16 * k)) as u16;
        let first = _mm512_add_epi32(_mm512_set1_epi32((base + 16 * k) as i32), lanes);
        // SAFETY: at most the positions of the quarters before were kept (`at`), so the
        // sixteen lanes at `dst + at` lie within the `count_ones + 16` the caller provides.
        unsafe {
            _mm512_storeu_epi32(
                dst.add(at).cast(),
                _mm512_maskz_compress_epi32(quarter, first),
            )
        };
        at += quarter.count_ones() as usize;
    }
    at
}

/// The bits of `bits` whose position is set in `mask` (of the same length), in order;
/// `None` when the processor lacks BMI2 or POPCNT.
pub(crate) fn keep_bits(bits: &Bitmap, mask: &Bitmap, kept: usize) -> Option<Bitmap> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the processor has BMI2 and POPCNT (checked just above).
            return Some(unsafe { keep_bits_bmi2(bits, mask, kept) });
        }
    }
    let _ = (bits, mask, kept);
    None
}

/// [`keep_bits`] by `pext`, a word of the mask at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2,popcnt")]
unsafe fn keep_bits_bmi2(bits: &Bitmap, mask: &Bitmap, kept: usize) -> Bitmap {
    use std::arch::x86_64::_pext_u64;
    let mut out = BitmapBuilder::with_capacity(kept);
    for wi in 0..mask.word_count() {
        let m = mask.word(wi);
        out.push_bits(_pext_u64(bits.word(wi), m), m.count_ones() as usize);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The compress path keeps exactly the rows a plain loop keeps, for doubles and 64- and
    /// 32-bit integers (negative zero and NaN bits included), at every density, for masks
    /// that are windows at odd offsets, over lengths around the 4-, 8- and 64-row steps; it
    /// runs wherever the processor has AVX-512F and VL, and only there.
    #[test]
    fn compress_keeps_what_the_mask_selects() {
        let mut r = Rng(41);
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 127, 1000, 4099] {
            for per_mille in [0, 3, 100, 500, 900, 1000] {
                let bits: Vec<bool> = (0..len + 5).map(|_| r.below(1000) < per_mille).collect();
                let mask = Bitmap::from_bools(bits).slice(5, len);
                let ints: Vec<i64> = (0..len)
                    .map(|_| r.below(1 << 40) as i64 - (1 << 39))
                    .collect();
                let floats: Vec<f64> = (0..len)
                    .map(|i| match i % 5 {
                        0 => -0.0,
                        1 => f64::from_bits(0x7ff8_0000_0000_0001),
                        _ => r.below(1 << 20) as f64 / 7.0,
                    })
                    .collect();
                let kept = mask.count_ones();
                let plain = |n: usize| (0..n).filter(|&i| mask.get(i));
                let got = keep_rows(&ints, &mask, kept);
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    got.is_some(),
                    std::arch::is_x86_feature_detected!("avx512f")
                );
                if let Some(got) = got {
                    let want: Vec<i64> = plain(len).map(|i| ints[i]).collect();
                    assert_eq!(got, want, "{len} rows, {per_mille}/1000");
                }
                if let Some(got) = keep_rows(&floats, &mask, kept) {
                    let want: Vec<u64> = plain(len).map(|i| floats[i].to_bits()).collect();
                    let got: Vec<u64> = got.iter().map(|f| f.to_bits()).collect();
                    assert_eq!(got, want, "{len} rows, {per_mille}/1000");
                }
                let dates: Vec<i32> = ints.iter().map(|&v| v as i32).collect();
                if let Some(got) = keep_rows(&dates, &mask, kept) {
                    let want: Vec<i32> = plain(len).map(|i| dates[i]).collect();
                    assert_eq!(got, want, "{len} rows, {per_mille}/1000");
                }
                assert!(keep_rows(&[1i16, 2], &Bitmap::new_filled(2, true), 2).is_none());
            }
        }
    }

    /// The byte compress keeps exactly the bytes a plain loop keeps, at every density, for
    /// masks that are windows at odd offsets, over lengths around the 64-byte step; it runs
    /// wherever the processor has AVX-512 VBMI2 and BW, and only there.
    #[test]
    fn byte_compress_keeps_what_the_mask_selects() {
        let mut r = Rng(43);
        for len in [0, 1, 63, 64, 65, 127, 128, 1000, 4099] {
            for per_mille in [0, 3, 100, 500, 900, 1000] {
                let bits: Vec<bool> = (0..len + 5).map(|_| r.below(1000) < per_mille).collect();
                let mask = Bitmap::from_bools(bits).slice(5, len);
                let bytes: Vec<u8> = (0..len).map(|_| r.below(256) as u8).collect();
                let got = keep_bytes(&bytes, &mask, mask.count_ones());
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    got.is_some(),
                    std::arch::is_x86_feature_detected!("avx512vbmi2")
                        && std::arch::is_x86_feature_detected!("avx512bw")
                );
                if let Some(got) = got {
                    let want: Vec<u8> = (0..len)
                        .filter(|&i| mask.get(i))
                        .map(|i| bytes[i])
                        .collect();
                    assert_eq!(got, want, "{len} bytes, {per_mille}/1000");
                }
            }
        }
    }

    /// The compressed positions and the extracted bits are those a plain loop finds, at
    /// every density, for masks (and bits) that are windows at odd offsets, over lengths
    /// around the 16- and 64-row steps; each path runs wherever the processor has its
    /// instructions, and only there.
    #[test]
    fn positions_and_bits_are_what_the_mask_selects() {
        let mut r = Rng(43);
        for len in [0, 1, 15, 16, 17, 63, 64, 65, 127, 1000, 4099] {
            for per_mille in [0, 3, 100, 500, 900, 1000] {
                let mut draw = |offset: usize| {
                    let bits: Vec<bool> = (0..len + offset)
                        .map(|_| r.below(1000) < per_mille)
                        .collect();
                    Bitmap::from_bools(bits).slice(offset, len)
                };
                let (mask, bits) = (draw(5), draw(61));
                let kept = mask.count_ones();
                let want: Vec<usize> = (0..len).filter(|&i| mask.get(i)).collect();
                let positions = set_positions(&mask, kept);
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    positions.is_some(),
                    std::arch::is_x86_feature_detected!("avx512f")
                );
                if let Some(got) = positions {
                    let got: Vec<usize> = got.iter().map(|&p| p as usize).collect();
                    assert_eq!(got, want, "{len} rows, {per_mille}/1000");
                }
                let extracted = keep_bits(&bits, &mask, kept);
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    extracted.is_some(),
                    std::arch::is_x86_feature_detected!("bmi2")
                        && std::arch::is_x86_feature_detected!("popcnt")
                );
                if let Some(got) = extracted {
                    let got: Vec<bool> = (0..got.len()).map(|i| got.get(i)).collect();
                    let want: Vec<bool> = want.iter().map(|&i| bits.get(i)).collect();
                    assert_eq!(got, want, "{len} rows, {per_mille}/1000");
                }
            }
        }
    }
}
