//! Reads compared with the expected state: one key ([`check`]), the entries
//! of a scan ([`check_entries`]), and every key of the store
//! ([`verify_all`], after a reopen or a kill).

use bloomlsm::Bytes;

use super::codec::{State, describe, key, key_index, matches};
use super::expected::Expected;
use super::failure::{Checked, Failure, engine};
use super::store::{Store, keyspace_name};

/// Keys per `multi_get` of a full verification.
const CHUNK: usize = 64;

/// Fails unless `found` is what `want` reads as, for key `k` of keyspace
/// `ks` (read by `op`).
pub fn check(op: &'static str, ks: u32, k: u32, found: Option<&[u8]>, want: State) -> Checked {
    if matches(found, ks, k, want) {
        Ok(())
    } else {
        Err(Failure::mismatch(
            op,
            &keyspace_name(ks),
            &key(k),
            want.to_string(),
            describe(found),
        ))
    }
}

/// Fails unless `got`, the entries a scan of keyspace `ks` yielded, are
/// exactly `want`, the keys the expected state holds present there with
/// their states, in the same order: ascending, or with `descending`
/// descending.
pub fn check_entries(
    op: &'static str,
    ks: u32,
    got: &[(Bytes, Bytes)],
    want: &[(u32, State)],
    descending: bool,
) -> Checked {
    let name = keyspace_name(ks);
    for (i, (k, v)) in got.iter().enumerate() {
        let Some(idx) = key_index(k) else {
            return Err(Failure::mismatch(
                op,
                &name,
                k,
                "no such key (the run writes none like it)",
                describe(Some(v)),
            ));
        };
        match want.get(i) {
            Some(&(w, state)) if w == idx => check(op, ks, idx, Some(v), state)?,
            // The scan yielded a key the expected state holds absent, or
            // skipped the key expected here.
            Some(&(w, state)) => {
                let (at, expected, found) = if (idx < w) != descending {
                    (
                        idx,
                        "absent (not in the scan's expected entries)".into(),
                        describe(Some(v)),
                    )
                } else {
                    (w, state.to_string(), "absent (the scan skipped it)".into())
                };
                return Err(Failure::mismatch(op, &name, &key(at), expected, found));
            }
            None => {
                return Err(Failure::mismatch(
                    op,
                    &name,
                    k,
                    "absent (past the scan's expected entries)",
                    describe(Some(v)),
                ));
            }
        }
    }
    if let Some(&(w, state)) = want.get(got.len()) {
        return Err(Failure::mismatch(
            op,
            &name,
            &key(w),
            state.to_string(),
            "absent (the scan ended before it)",
        ));
    }
    Ok(())
}

/// The keys `lo..hi` of keyspace `ks` the expected state holds present,
/// with their states, ascending.
pub fn present(expected: &Expected, ks: u32, lo: u32, hi: u32) -> Vec<(u32, State)> {
    (lo..hi.min(expected.keys()))
        .filter_map(|k| {
            let s = expected.state((ks, k));
            s.present().then_some((k, s))
        })
        .collect()
}

/// What a full verification found of the writes a kill left in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settled {
    /// Keys whose write in flight is not in the store.
    pub old: u64,
    /// Keys whose write in flight is.
    pub new: u64,
}

/// Checks every key of every keyspace: a forward scan of each, `multi_get`
/// of every key, a backward scan, then `Db::verify` (every block of every
/// table). With `recover` (after a kill), a key with a write in flight may
/// read as its old or its new state, and the expected state is settled to
/// the one read; without it, every key must read exactly as recorded.
pub fn verify_all(store: &Store, expected: &Expected, recover: bool) -> Checked<Settled> {
    let mut settled = Settled::default();
    let keys = expected.keys();
    for (ks, handle) in store.ks.iter().enumerate() {
        let ks = ks as u32;
        let name = keyspace_name(ks);
        // Forward: every key in order, settling writes in flight.
        let mut it = handle.scan(..).peekable();
        for k in 0..keys {
            let found = match it.peek() {
                Some(Ok((kb, _))) if key_index(kb) == Some(k) => it.next().and_then(Result::ok),
                // A key the run never writes, or one out of order.
                Some(Ok((kb, v))) if key_index(kb).is_none_or(|i| i < k) => {
                    return Err(Failure::mismatch(
                        "verify (forward scan)",
                        &name,
                        kb,
                        "no such key here (the run writes none like it, or it is out of order)",
                        describe(Some(v)),
                    ));
                }
                Some(Err(_)) => {
                    let e = it.next().and_then(Result::err);
                    return Err(Failure::error(
                        format!("scan keyspace {name}"),
                        e.map_or(String::new(), |e| e.to_string()),
                    ));
                }
                _ => None,
            };
            let found = found.as_ref().map(|(_, v)| &v[..]);
            let (state, pending) = expected.get((ks, k));
            let settle = match pending {
                Some(p) if recover && !matches(found, ks, k, state) && matches(found, ks, k, p) => {
                    settled.new += 1;
                    Some(p)
                }
                Some(_) if recover && matches(found, ks, k, state) => {
                    settled.old += 1;
                    Some(state)
                }
                _ => None,
            };
            match settle {
                Some(s) => expected.commit(&[((ks, k), s)]).map_err(Failure::Error)?,
                None => {
                    let allowed = match pending {
                        Some(p) if recover => format!("{state} or {p} (a write in flight)"),
                        _ => state.to_string(),
                    };
                    if !matches(found, ks, k, state) || pending.is_some() {
                        return Err(Failure::mismatch(
                            "verify (forward scan)",
                            &name,
                            &key(k),
                            allowed,
                            describe(found),
                        ));
                    }
                }
            }
        }
        if let Some(extra) = it.next() {
            let (k, v) = engine(&format!("scan keyspace {name}"), extra)?;
            return Err(Failure::mismatch(
                "verify (forward scan)",
                &name,
                &k,
                "no such key (past the run's keys)",
                describe(Some(&v)),
            ));
        }
        // Point reads, through the filters.
        let all: Vec<u32> = (0..keys).collect();
        for chunk in all.chunks(CHUNK) {
            let kb: Vec<Vec<u8>> = chunk.iter().map(|&k| key(k)).collect();
            let got = engine(&format!("multi_get keyspace {name}"), handle.multi_get(&kb))?;
            for (&k, v) in chunk.iter().zip(&got) {
                check(
                    "verify (multi_get)",
                    ks,
                    k,
                    v.as_deref(),
                    expected.state((ks, k)),
                )?;
            }
        }
        // Backward.
        let got: Vec<(Bytes, Bytes)> = engine(
            &format!("scan keyspace {name} backward"),
            handle.scan(..).rev().collect(),
        )?;
        let mut want = present(expected, ks, 0, keys);
        want.reverse();
        check_entries("verify (backward scan)", ks, &got, &want, true)?;
    }
    engine("verify the store's tables", store.db.verify())?;
    Ok(settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::codec::value;

    fn entry(ks: u32, k: u32, v: u32) -> (Bytes, Bytes) {
        (key(k).into(), value(ks, k, v).into())
    }

    #[test]
    fn scans_must_match_exactly() {
        let v1 = State::default().put();
        let v2 = v1.put();
        let want = [(3, v1), (5, v2)];
        check_entries("scan", 1, &[entry(1, 3, 1), entry(1, 5, 2)], &want, false).unwrap();
        // A stale version, a missing key, an extra key, a key of another
        // keyspace's value, a key the run never writes.
        for got in [
            vec![entry(1, 3, 1), entry(1, 5, 1)],
            vec![entry(1, 3, 1)],
            vec![entry(1, 3, 1), entry(1, 4, 1), entry(1, 5, 2)],
            vec![entry(1, 3, 1), entry(1, 5, 2), entry(1, 6, 1)],
            vec![entry(2, 3, 1), entry(1, 5, 2)],
            vec![(Bytes::from_static(b"zzz"), value(1, 3, 1).into())],
        ] {
            assert!(
                check_entries("scan", 1, &got, &want, false).is_err(),
                "{got:?}"
            );
        }
        let back = [(5, v2), (3, v1)];
        check_entries("scan", 1, &[entry(1, 5, 2), entry(1, 3, 1)], &back, true).unwrap();
        let e =
            check_entries("scan", 1, &[entry(1, 5, 2), entry(1, 4, 1)], &back, true).unwrap_err();
        assert!(e.to_string().contains("key 000000:04"), "{e}");
    }
}
