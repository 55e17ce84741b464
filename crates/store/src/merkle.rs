//! The Merkle tree of a checkpoint's chain heads (docs/architecture.md, "The chained ledger"):
//! a checkpoint signs the root over every account's head, and a statement carries one account's
//! head with its inclusion proof — so a customer's statement proves its own chain is in what
//! the operator signed and says nothing about any other account (issue 42: the checkpoint
//! embedded in every statement listed every account with its row count and head).
//!
//! The tree is RFC 9162's (Certificate Transparency 2.0, §2.1): a leaf's hash is
//! `SHA-256(0x00 ‖ leaf)`, a node's `SHA-256(0x01 ‖ left ‖ right)`, the tree over `n` leaves
//! splits at the largest power of two below `n`, and the tree of no leaves is `SHA-256("")`.
//! A leaf is the text `ACCOUNT_ID " " SEQ " " HASH`, leaves in byte order of their account ids.
//! `docs/verify_statement.py` computes the same.

use sha2::{Digest, Sha256};

/// A hash of the tree.
pub type Digest32 = [u8; 32];

/// The leaf of an account's head.
pub fn leaf(account_id: &str, seq: i64, hash: &str) -> Vec<u8> {
    format!("{account_id} {seq} {hash}").into_bytes()
}

/// `SHA-256(0x00 ‖ leaf)`.
pub fn leaf_hash(leaf: &[u8]) -> Digest32 {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

fn node(left: &Digest32, right: &Digest32) -> Digest32 {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two below `n` (`n` ≥ 2).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

/// The root over `leaves` (their leaf hashes, in order).
pub fn root(leaves: &[Digest32]) -> Digest32 {
    match leaves.len() {
        0 => Sha256::digest(b"").into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node(&root(&leaves[..k]), &root(&leaves[k..]))
        }
    }
}

/// The inclusion proof of leaf `index` among `leaves`: the sibling hashes from the leaf up.
pub fn proof(leaves: &[Digest32], index: usize) -> Vec<Digest32> {
    let n = leaves.len();
    if n <= 1 || index >= n {
        return Vec::new();
    }
    let k = split(n);
    if index < k {
        let mut path = proof(&leaves[..k], index);
        path.push(root(&leaves[k..]));
        path
    } else {
        let mut path = proof(&leaves[k..], index - k);
        path.push(root(&leaves[..k]));
        path
    }
}

/// Whether `path` proves the leaf hash `leaf` at `index` of a tree of `size` leaves whose root
/// is `root` (RFC 9162 §2.1.3.2).
pub fn verify(index: u64, size: u64, leaf: &Digest32, path: &[Digest32], root: &Digest32) -> bool {
    if index >= size {
        return false;
    }
    let (mut f_n, mut s_n) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if s_n == 0 {
            return false;
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node(p, &r);
            if f_n & 1 == 0 {
                while f_n & 1 == 0 && f_n != 0 {
                    f_n >>= 1;
                    s_n >>= 1;
                }
            }
        } else {
            r = node(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    s_n == 0 && r == *root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: usize) -> Vec<Digest32> {
        (0..n)
            .map(|i| leaf_hash(&leaf(&format!("acct_{i:03}"), i as i64, "ab")))
            .collect()
    }

    #[test]
    fn every_leaf_of_every_size_proves_and_nothing_else_does() {
        for n in 1..=33 {
            let leaves = leaves(n);
            let top = root(&leaves);
            for i in 0..n {
                let path = proof(&leaves, i);
                assert!(
                    verify(i as u64, n as u64, &leaves[i], &path, &top),
                    "{i} of {n}"
                );
                // Another leaf, or a path bent anywhere: refused. (The size is signed with the
                // root, so a proof is read at the size the checkpoint states.)
                let other = leaf_hash(b"acct_x 1 ab");
                assert!(!verify(i as u64, n as u64, &other, &path, &top));
                let mut bent = path.clone();
                if let Some(first) = bent.first_mut() {
                    first[0] ^= 1;
                    assert!(!verify(i as u64, n as u64, &leaves[i], &bent, &top));
                }
            }
        }
    }

    /// The RFC's own shape: a tree of three leaves is `node(node(a, b), c)`.
    #[test]
    fn three_leaves_split_two_and_one() {
        let l = leaves(3);
        assert_eq!(root(&l), node(&node(&l[0], &l[1]), &l[2]));
        assert_eq!(proof(&l, 2), vec![node(&l[0], &l[1])]);
        assert_eq!(root(&[]), <Digest32>::from(Sha256::digest(b"")));
    }
}
