//! Dimension reduction (wire-formats §2, "reducing embedding dimensions").
//!
//! With `dimensions` set, the API returns vectors that are already shortened and still unit-norm.
//! A gateway whose upstream cannot shorten vectors itself emulates it the way OpenAI's embeddings
//! guide describes: keep the first `d` components and L2-normalise them, `v[:d] / ‖v[:d]‖`,
//! leaving a zero vector as it is.

/// Shortens `values` to its first `dims` components and rescales them to unit L2 norm.
///
/// - If `dims >= values.len()` the vector is left unchanged (not even renormalised): there is
///   nothing to shorten.
/// - The norm is computed in `f64`, so it neither overflows nor loses precision for any finite
///   `f32` input; each component is divided in `f64` and rounded once to `f32`.
/// - If the kept components are all zero, or their norm is not finite (an infinity or NaN among
///   them), they are only truncated, never divided.
/// - `dims == 0` leaves an empty vector; validation ([`validate`](crate::validate())) refuses
///   `dimensions: 0` before it gets here.
///
/// ```
/// use tollgate_embeddings::shorten;
///
/// let mut v = vec![3.0, 4.0, 12.0];
/// shorten(&mut v, 2);
/// assert_eq!(v, vec![0.6, 0.8]);
///
/// let mut zero = vec![0.0, 0.0, 1.0];
/// shorten(&mut zero, 2);
/// assert_eq!(zero, vec![0.0, 0.0]);
/// ```
pub fn shorten(values: &mut Vec<f32>, dims: usize) {
    if dims >= values.len() {
        return;
    }
    values.truncate(dims);
    let norm = values
        .iter()
        .map(|&v| f64::from(v) * f64::from(v))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return;
    }
    for v in values.iter_mut() {
        // Rounding the quotient to the nearest f32 is the intent of this cast.
        *v = (f64::from(*v) / norm) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longer_target_leaves_the_vector_alone() {
        let mut v = vec![3.0, 4.0];
        shorten(&mut v, 2);
        assert_eq!(v, vec![3.0, 4.0]);
        shorten(&mut v, 10);
        assert_eq!(v, vec![3.0, 4.0]);
    }

    #[test]
    fn truncates_then_normalises() {
        let mut v = vec![3.0, 4.0, 100.0];
        shorten(&mut v, 2);
        assert_eq!(v, vec![0.6, 0.8]);
    }

    #[test]
    fn zero_prefix_stays_zero() {
        let mut v = vec![0.0, -0.0, 5.0];
        shorten(&mut v, 2);
        assert_eq!(v, vec![0.0, -0.0]);
    }

    #[test]
    fn tiny_and_huge_values_normalise_without_overflow() {
        let mut tiny = vec![1e-45, 0.0, 1.0];
        shorten(&mut tiny, 2);
        assert_eq!(tiny, vec![1.0, 0.0]);

        let mut huge = vec![f32::MAX, f32::MAX, 1.0];
        shorten(&mut huge, 2);
        let expected = std::f32::consts::FRAC_1_SQRT_2;
        assert!((huge[0] - expected).abs() < 1e-6, "{huge:?}");
        assert!((huge[1] - expected).abs() < 1e-6, "{huge:?}");
    }

    #[test]
    fn non_finite_prefix_is_only_truncated() {
        let mut v = vec![f32::INFINITY, 1.0, 2.0];
        shorten(&mut v, 2);
        assert_eq!(v, vec![f32::INFINITY, 1.0]);
    }

    #[test]
    fn zero_dims_empties_the_vector() {
        let mut v = vec![1.0, 2.0];
        shorten(&mut v, 0);
        assert!(v.is_empty());
    }
}
