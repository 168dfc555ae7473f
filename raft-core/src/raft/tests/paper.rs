//! Ported etcd tests: paper.
