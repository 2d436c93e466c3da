//! Orthogonal polynomials (Chebyshev, shifted Chebyshev, Hermite, Laguerre, Legendre) by torch's
//! recurrences and closed forms (Math.h). torch's build contracts `a*b - c*d` in the recurrences into
//! fma(a, b, -(c*d)); the same fused steps here give its float32 values bit for bit.

use super::{k, Real};

/// torch reads the degree with a C cast: NaN or out of range gives i64::MIN on x86 (so 0 out).
fn degree<T: Real>(n: T) -> i64 {
    let v = n.f();
    if v.is_nan() || !(-9.2e18..9.2e18).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

#[derive(Clone, Copy)]
pub enum Poly {
    ChebT,
    ChebU,
    ChebV,
    ChebW,
    ShiftT,
    ShiftU,
    ShiftV,
    ShiftW,
    HermiteH,
    HermiteHe,
    Laguerre,
    Legendre,
}

pub fn poly<T: Real>(which: Poly, x: T, n: T) -> T {
    let n = degree(n);
    if n < 0 {
        return T::zero();
    }
    let nf = k::<T>(n as f64);
    let one = T::one();
    let even = n % 2 == 0;
    match which {
        Poly::ChebT | Poly::ChebU | Poly::ChebV | Poly::ChebW => cheb(which, x, n, nf, even),
        Poly::ShiftT | Poly::ShiftU | Poly::ShiftV | Poly::ShiftW => shifted(which, x, n, nf, even),
        Poly::HermiteH => {
            if n == 0 {
                return one;
            }
            if n == 1 {
                return x + x;
            }
            if n > if T::MACHEP < 1e-10 { 512 } else { 128 } {
                return T::nan();
            }
            let (mut p, mut q, mut r) = (one, x + x, T::zero());
            let mut kk = 2;
            while kk < n + n {
                r = (x + x).mul_add(q, -(k::<T>(kk as f64) * p));
                p = q;
                q = r;
                kk += 2;
            }
            r
        }
        Poly::HermiteHe => {
            if n == 0 {
                return one;
            }
            if n == 1 {
                return x;
            }
            if n > if T::MACHEP < 1e-10 { 512 } else { 128 } {
                return T::nan();
            }
            let (mut p, mut q, mut r) = (one, x, T::zero());
            for kk in 1..n {
                r = x.mul_add(q, -(k::<T>(kk as f64) * p));
                p = q;
                q = r;
            }
            r
        }
        Poly::Laguerre => {
            if x.abs() == T::zero() || n == 0 {
                return one;
            }
            if n == 1 {
                return one - x;
            }
            let (mut p, mut q, mut r) = (one, one - x, T::nan()); // torch returns its unset r (NaN) when q starts NaN
            let mut kk = 1;
            while kk < n && !q.is_nan() {
                let kf = k::<T>(kk as f64);
                r = (kf + kf + (one - x)).mul_add(q, -(kf * p)) / (kf + one);
                p = q;
                q = r;
                kk += 1;
            }
            r
        }
        Poly::Legendre => {
            if x.abs() == one {
                return if x > T::zero() || even { one } else { -one };
            }
            if n == 0 {
                return one;
            }
            if n == 1 {
                return x;
            }
            let (mut p, mut q, mut r) = (one, x, T::nan());
            let mut kk = 1;
            while kk < n && !q.is_nan() {
                let kf = k::<T>(kk as f64);
                r = ((kf + kf + one) * x).mul_add(q, -(kf * p)) / (kf + one);
                p = q;
                q = r;
                kk += 1;
            }
            r
        }
    }
}

/// The three-term recurrence r = 2x·q - p from (p, q) = (1, q1) up to degree n.
fn recur<T: Real>(two_x: T, q1: T, n: i64) -> T {
    let (mut p, mut q, mut r) = (T::one(), q1, T::nan()); // torch returns its unset r (NaN) when q starts NaN
    let mut kk = 2;
    while kk <= n && !q.is_nan() {
        r = two_x.mul_add(q, -p);
        p = q;
        q = r;
        kk += 1;
    }
    r
}

fn cheb<T: Real>(which: Poly, x: T, n: i64, nf: T, even: bool) -> T {
    let one = T::one();
    let half = k::<T>(0.5);
    let two_n1 = nf + nf + one;
    match which {
        Poly::ChebT => {
            if x.abs() == one {
                return if x > T::zero() || even { one } else { -one };
            }
            if n > 6 && x.abs() < one {
                return (nf * x.acos()).cos();
            }
            match n {
                0 => one,
                1 => x,
                _ => recur(x + x, x, n),
            }
        }
        Poly::ChebU => {
            if x.abs() == one {
                return if x > T::zero() || even { nf + one } else { -(nf + one) };
            }
            if n > 8 && x.abs() < one {
                let a = x.acos();
                if a.sin() != T::zero() {
                    return ((nf + one) * a).sin() / a.sin();
                }
                return (nf + one) * ((nf + one) * a).cos() / x;
            }
            match n {
                0 => one,
                1 => x + x,
                _ => recur(x + x, x + x, n),
            }
        }
        Poly::ChebV => {
            if x.abs() == one {
                if x > T::zero() {
                    return one;
                }
                return if even { two_n1 } else { -two_n1 };
            }
            if n > 8 && x.abs() < one {
                let a = x.acos();
                if (a / k(2.0)).sin() != one {
                    return ((nf + half) * a).cos() / (a / k(2.0)).cos();
                }
                return if even { two_n1 } else { -two_n1 };
            }
            match n {
                0 => one,
                1 => x + x - one,
                _ => recur(x + x, x + x - one, n),
            }
        }
        _ => {
            if x.abs() == one {
                if x > T::zero() {
                    return two_n1;
                }
                return if even { one } else { -one };
            }
            if n > 8 && x.abs() < one {
                let a = x.acos();
                if (a / k(2.0)).cos() != one {
                    return ((nf + half) * a).sin() / (a / k(2.0)).sin();
                }
                if x > T::zero() {
                    return two_n1;
                }
                return if even { one } else { -one };
            }
            match n {
                0 => one,
                1 => x + x + one,
                _ => recur(x + x, x + x + one, n),
            }
        }
    }
}

fn shifted<T: Real>(which: Poly, x: T, n: i64, nf: T, even: bool) -> T {
    let one = T::one();
    let half = k::<T>(0.5);
    let two_n1 = nf + nf + one;
    let y = x + x - one;
    let two_y = y + y;
    match which {
        Poly::ShiftT => {
            if x == one {
                return one;
            }
            if x == T::zero() {
                return if even { one } else { -one };
            }
            if n > 6 && y.abs() < one {
                return (nf * y.acos()).cos();
            }
            match n {
                0 => one,
                1 => y,
                _ => recur(two_y, y, n),
            }
        }
        Poly::ShiftU => {
            if x == one {
                return nf + one;
            }
            if x == T::zero() {
                return if even { nf + one } else { -(nf + one) };
            }
            if n > 6 && y.abs() < one {
                let a = y.acos();
                if a.sin() != T::zero() {
                    return ((nf + one) * a).sin() / a.sin();
                }
                return (nf + one) * ((nf + one) * a).cos() / y;
            }
            match n {
                0 => one,
                1 => two_y,
                _ => recur(two_y, two_y, n),
            }
        }
        Poly::ShiftV => {
            if x == one {
                return one;
            }
            if x == T::zero() {
                return if even { two_n1 } else { -two_n1 };
            }
            if n > 6 && y.abs() < one {
                let a = y.acos();
                if (a / k(2.0)).sin() != one {
                    return ((nf + half) * a).cos() / (a / k(2.0)).cos();
                }
                return if even { two_n1 } else { -two_n1 };
            }
            match n {
                0 => one,
                1 => two_y - one,
                _ => recur(two_y, two_y - one, n),
            }
        }
        _ => {
            if x == one {
                return two_n1;
            }
            if x == T::zero() {
                return if even { one } else { -one };
            }
            if n > 4 && y.abs() < one {
                let a = y.acos();
                if (a / k(2.0)).cos() != one {
                    return ((nf + half) * a).sin() / (a / k(2.0)).sin();
                }
                return if even { one } else { -one };
            }
            match n {
                0 => one,
                1 => two_y + one,
                _ => recur(two_y, two_y + one, n),
            }
        }
    }
}
